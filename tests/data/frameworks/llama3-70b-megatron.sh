# Llama 3 70B on 64 H100 (8 nodes of 8) with Megatron-LM: tp 8 x pp 4 x dp 2, global batch 64
# of sequence 8192, micro-batch 1 (m = 64 / (1 x 2) = 32 microbatches), selective recompute.
torchrun --nproc-per-node 8 --nnodes 8 pretrain_gpt.py \
  --tensor-model-parallel-size 8 \
  --pipeline-model-parallel-size 4 \
  --sequence-parallel \
  --use-distributed-optimizer --overlap-grad-reduce \
  --micro-batch-size 1 --global-batch-size 64 \
  --recompute-activations \
  --num-layers 80 --hidden-size 8192 --ffn-hidden-size 28672 \
  --num-attention-heads 64 --group-query-attention --num-query-groups 8 \
  --seq-length 8192 --max-position-embeddings 8192 --vocab-size 128256 \
  --swiglu --normalization RMSNorm --position-embedding-type rope \
  --untie-embeddings-and-output-weights --disable-bias-linear \
  --attention-dropout 0.0 --hidden-dropout 0.0 \
  --bf16 --lr 1.5e-4 --train-iters 1000
