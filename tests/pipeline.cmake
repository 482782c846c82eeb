# Tensor/pipeline plans end to end (included from tests/CMakeLists.txt): predict's per-stage table
# and its rule errors, tune on a pinned layout and on a searched one, the frameworks' refusals.
# The closed forms (bubbles, microbatches in flight, Korthikanti's activations) are unit tests:
# unit/test_pipeline.cpp (unit_model).
set(G $<TARGET_FILE:gaccum-tune>)
set(X "${PROJECT_SOURCE_DIR}/examples")
set(T "${CMAKE_CURRENT_BINARY_DIR}/pipeline-out")
set(S70 ${X}/specs/llama2-70b.json)
set(C64 ${X}/clusters/h100-8node-ib400.json)

# Megatron's 145.6B on 1536 A100 (Narayanan et al. 2021): 1F1B stage 0 holds 8 microbatches,
# the last rank 1; every stage printed, the peak one marked.
gaccum_cli_test(pipeline-predict-stages 0 "layout tp 8 x pp 8 1f1b x dp 24 = world_size 1536.*pipeline 1f1b schedule .*bubble [0-9.]+%.*0e 10 .* 8 .*<- peak.*7h 10 .* 1 .*fits yes" -- sh -c
  "\"$0\" predict --spec \"$1/specs/megatron-gpt-145b.json\" --cluster \"$1/clusters/selene-a100-192node.json\" -p 1536 --tp 8 --pp 8 -b 1 -k 96 --strategy fused --framework megatron | tr -s '\\n ' ' '"
  ${G} ${X})
gaccum_cli_test(pipeline-predict-json 0 "\"bubble_fraction\": 0\\.[0-9]+,.*\"peak_stage\": 0,.*\"schedule\": \"interleaved-1f1b\".*\"stages\": \\[.*\"in_flight\": 47" -- sh -c
  "\"$0\" predict --spec \"$1/specs/megatron-gpt-145b.json\" --cluster \"$1/clusters/selene-a100-192node.json\" -p 1536 --tp 8 --pp 8 --virtual-stages 5 -b 1 -k 96 --strategy fused --json | tr -s '\\n ' ' '"
  ${G} ${X})
# Each rule names the fix.
gaccum_cli_test(pipeline-m-below-pp 2 "--schedule: 1f1b needs at least pp = 8 microbatches per step \\(got m = 4\\).*raise the accumulation steps to 8" --one-line-stderr --
  ${G} predict --spec ${S70} --cluster ${C64} -p 64 --tp 8 --pp 8 -b 1 -k 4)
gaccum_cli_test(pipeline-interleaved-groups 2 "interleaved-1f1b runs microbatches in groups of pp = 4 \\(Megatron-LM\\): m = 6 is not a multiple of 4; use m = 4 or 8" --one-line-stderr --
  ${G} predict --spec ${S70} --cluster ${C64} -p 64 --tp 8 --pp 4 --virtual-stages 2 -b 1 -k 6)
gaccum_cli_test(pipeline-layers-uneven 2 "80 layers do not split evenly over pp 3 x virtual stages 1 = 3 stages.*--stage-layers 27,27,26 .*Megatron-LM's --decoder-first/last-pipeline-num-layers" --one-line-stderr --
  ${G} predict --spec ${S70} --cluster ${C64} -p 48 --tp 8 --pp 3 -b 1 -k 8 --framework megatron)
# Without --framework the plan is priced as the framework that runs it as given: torchtitan,
# which splits 80 layers over 3 stages itself (82 effective: 28 - 1, 27, 27 - 1).
gaccum_cli_test(pipeline-layers-uneven-torchtitan 0 "pp 3 1f1b \\(layers 27, 27, 26\\) x dp 2.*priced as torchtitan runs it.*0e +27 .*1 +27 .*2h +26" -- sh -c
  "\"$0\" predict --spec \"$1\" --cluster \"$2\" -p 48 --tp 8 --pp 3 -b 1 -k 8 | tr -s '\\n ' ' '" ${G} ${S70} ${C64})
gaccum_cli_test(pipeline-stage-layers 0 "0e 26 .*1 28 .*2h 26" -- sh -c
  "\"$0\" predict --spec \"$1\" --cluster \"$2\" -p 48 --tp 8 --pp 3 --stage-layers 26,28,26 -b 1 -k 8 | tr -s '\\n ' ' '" ${G} ${S70} ${C64})
gaccum_cli_test(pipeline-tp-heads 2 "--tp 16: the 64 attention heads and 8 kv heads must be multiples of tp" --one-line-stderr --
  ${G} predict --spec ${S70} --cluster ${C64} -p 64 --tp 16 -b 1 -k 8)
gaccum_cli_test(pipeline-world-multiple 2 "world_size 60 is not a multiple of tp x pp x cp = 16" --one-line-stderr --
  ${G} predict --spec ${S70} --cluster ${C64} -p 60 --tp 8 --pp 2 -b 1 -k 8)
gaccum_cli_test(pipeline-every-step 2 "a pipeline reduces gradients once per step.*not every-step" --one-line-stderr --
  ${G} predict --spec ${S70} --cluster ${C64} -p 64 --tp 8 --pp 2 -b 1 -k 8 --strategy every-step)
gaccum_cli_test(pipeline-auto-predict 2 "--tp auto: only tune searches a layout" --one-line-stderr --
  ${G} predict --spec ${S70} --cluster ${C64} -p 64 --tp auto -b 1 -k 8)
gaccum_cli_test(pipeline-profile-refused 2 "tensor, pipeline and context parallel plans .* are priced for a --spec on a cluster only" --one-line-stderr --
  ${G} predict --profile ${CMAKE_CURRENT_SOURCE_DIR}/data/small-profile.json -b 4 -k 2 -p 2 --pp 2)
gaccum_cli_test(pipeline-framework-deepspeed 2 "--framework deepspeed: DeepSpeed's engine has no tensor or context parallelism of its own" --one-line-stderr --
  ${G} predict --spec ${S70} --cluster ${C64} -p 64 --tp 8 --pp 2 -b 1 -k 8 --strategy fused --framework deepspeed)
# tune on a pinned layout: the table's plan column, the pipeline in the explanation, the CSV.
gaccum_cli_test(pipeline-tune-pinned 0 "PINNED-OK" -- sh -c
  "rm -rf \"$1\" && mkdir -p \"$1\" && \"$0\" tune --spec \"$2\" --cluster \"$3\" --force --global-batch 512 --world-sizes 64 --tp 8 --pp 2 --precision bf16 --out \"$1\" > \"$1/stdout.txt\" && f=$(tr -s '\\n ' ' ' < \"$1/stdout.txt\") && echo \"$f\" | grep -q 'tp8 pp2 zero1 bf16' && echo \"$f\" | grep -q 'pipeline tp 8 x pp 2 1f1b: bubble' && echo \"$f\" | grep -q 'Megatron-LM --tensor-model-parallel-size 8 --pipeline-model-parallel-size 2' && grep -q ',8,2,1,1,1f1b,false,' \"$1/result.csv\" && echo PINNED-OK"
  ${G} ${T}/pinned ${S70} ${C64})
# tune --tp auto --pp auto: layouts searched, a pipeline picked for 70B on 64 GPUs.
gaccum_cli_test(pipeline-tune-auto 0 "layouts searched.*SEARCH-OK" -- sh -c
  "rm -rf \"$1\" && mkdir -p \"$1\" && \"$0\" tune --spec \"$2\" --cluster \"$3\" --force --global-batch 512 --world-sizes 64 --tp auto --pp auto --precision bf16 --out \"$1\" > \"$1/stdout.txt\" && tr -s '\\n ' ' ' < \"$1/stdout.txt\" && awk -F, 'NR > 1 && $42 > 1' \"$1/result.csv\" | grep -q . && echo SEARCH-OK"
  ${G} ${T}/auto ${S70} ${C64})

# check on a framework's own config: Megatron-LM arguments, a NeMo YAML and a torchtitan TOML of
# the same Llama 3 70B job (tp 8 x pp 4 x dp 2 on 64 H100, tests/data/frameworks/): the legal plan
# that fits passes (check 9 names the bubble and the peak stage); m < pp, an illegal interleaving
# and a stage-0 OOM each fail naming the fix; a flag overrides one field of the file.
set(FW ${CMAKE_CURRENT_SOURCE_DIR}/data/frameworks)
gaccum_cli_test(check-megatron-args 0 "9 tensor / pipeline layout PASS tp 8 sp x pp 4 1f1b x dp 2: m = 32 microbatches, bubble [0-9.]+% of the schedule, peak memory on stage 0.*tp 8 megatron args .*--tensor-model-parallel-size.*verdict: PASS" -- sh -c
  "\"$0\" check --megatron-args \"$1/llama3-70b-megatron.sh\" --cluster \"$2\" | tr -s '\\n ' ' '" ${G} ${FW} ${C64})
# The spec given beside Megatron-LM arguments is priced with Megatron-LM's vocab-parallel loss
# (the spec does not set "loss"), and the model notes say where it came from.
gaccum_cli_test(check-megatron-loss 0 "loss vocab-parallel \\(set by Megatron-LM, the job's framework: megatron args [^)]*llama3-70b-megatron.sh\\)" -- sh -c
  "\"$0\" check --megatron-args \"$1/llama3-70b-megatron.sh\" --spec builtin:llama3-70b@8192 --cluster \"$2\" --json" ${G} ${FW} ${C64})
gaccum_cli_test(check-nemo-config 0 "2 peak memory PASS predicted peak [0-9.]+ GiB per rank on pipeline stage 0 of 4.*9 tensor / pipeline layout PASS tp 8 sp x pp 4 1f1b x dp 2: m = 32.*verdict: PASS" -- sh -c
  "\"$0\" check --nemo-config \"$1/llama3-70b-nemo.yaml\" --cluster \"$2\" | tr -s '\\n ' ' '" ${G} ${FW} ${C64})
# torchtitan splits the 80 layers itself, the embedding and the output counted as a layer each
# (82 over 4 stages: 20, 21, 20, 19), not evenly as Megatron-LM does.
gaccum_cli_test(check-torchtitan-config 0 "check: llama3-70b \\(spec builtin:llama3-70b@8192.*9 tensor / pipeline layout PASS tp 8 sp x pp 4 1f1b x dp 2: m = 32.*the layers split as torchtitan splits them, model stage by stage: 20, 21, 20, 19.*verdict: PASS" -- sh -c
  "\"$0\" check --torchtitan-config \"$1/llama3-70b-torchtitan.toml\" --cluster \"$2\" | tr -s '\\n ' ' '" ${G} ${FW} ${C64})
gaccum_cli_test(check-megatron-m-below-pp 0 "9 tensor / pipeline layout FAIL .*1f1b needs at least pp = 4 microbatches per step \\(got m = 2\\).*fix: global_batch 8 \\(micro_batch 1 x m 4 x dp 2\\) is the nearest the 1f1b schedule runs.*EXIT1" -- sh -c
  "\"$0\" check --megatron-args \"$1/llama3-70b-megatron.sh\" --cluster \"$2\" --global-batch 4 > \"$3/check-megatron-m-below-pp.txt\" && echo EXIT0 >> \"$3/check-megatron-m-below-pp.txt\" || echo EXIT$? >> \"$3/check-megatron-m-below-pp.txt\" && tr -s '\\n ' ' ' < \"$3/check-megatron-m-below-pp.txt\"" ${G} ${FW} ${C64} ${CMAKE_CURRENT_BINARY_DIR})
gaccum_cli_test(check-nemo-interleaving 0 "9 tensor / pipeline layout FAIL .*groups of pp = 4 \\(Megatron-LM\\): m = 6 is not a multiple of 4.*fix: global_batch 16 \\(micro_batch 1 x m 8 x dp 2\\).*EXIT1" -- sh -c
  "\"$0\" check --nemo-config \"$1/llama3-70b-nemo.yaml\" --cluster \"$2\" --virtual-stages 2 --global-batch 12 > \"$3/check-nemo-interleaving.txt\" && echo EXIT0 >> \"$3/check-nemo-interleaving.txt\" || echo EXIT$? >> \"$3/check-nemo-interleaving.txt\" && tr -s '\\n ' ' ' < \"$3/check-nemo-interleaving.txt\"" ${G} ${FW} ${C64} ${CMAKE_CURRENT_BINARY_DIR})
gaccum_cli_test(check-torchtitan-stage0-oom 0 "2 peak memory FAIL predicted peak [0-9.]+ GiB per rank on pipeline stage 0 of 4 .* out of memory fix: use micro_batch 1 with accum_steps 32.*EXIT1" -- sh -c
  "\"$0\" check --torchtitan-config \"$1/llama3-70b-torchtitan.toml\" --cluster \"$2\" --micro-batch 4 --accum-steps 8 --checkpointing none > \"$3/check-torchtitan-stage0-oom.txt\" && echo EXIT0 >> \"$3/check-torchtitan-stage0-oom.txt\" || echo EXIT$? >> \"$3/check-torchtitan-stage0-oom.txt\" && tr -s '\\n ' ' ' < \"$3/check-torchtitan-stage0-oom.txt\"" ${G} ${FW} ${C64} ${CMAKE_CURRENT_BINARY_DIR})
# Partial recompute (a fraction of the layers in full recompute, the rest keeping everything) is
# priced between none and full by that fraction: Megatron-LM's block method with 1 of the 20 layers
# per stage at micro_batch 4 is out of memory (it read PASS priced as full recompute: 30.2 GiB), the
# fix naming full recompute; torchtitan's selective_ac_option "2" (every 2nd layer) fits.
gaccum_cli_test(check-megatron-block-recompute-oom 0 "2 peak memory FAIL predicted peak [0-9.]+ GiB per rank on pipeline stage 0 of 4 .*recomputing 5% of the layers, megatron args .*--recompute-method block --recompute-num-layers 1: 1 of 20 layers per stage: between full recompute's [0-9.]+ GiB and none's [0-9.]+ GiB.*out of memory fix: recompute every layer: full recompute predicts.*EXIT1" -- sh -c
  "sed 's/--recompute-activations/--recompute-granularity full --recompute-method block --recompute-num-layers 1/' \"$1/llama3-70b-megatron.sh\" > \"$3/block.sh\" && \"$0\" check --megatron-args \"$3/block.sh\" --cluster \"$2\" --micro-batch 4 > \"$3/check-block.txt\" && echo EXIT0 >> \"$3/check-block.txt\" || echo EXIT$? >> \"$3/check-block.txt\" && tr -s '\\n ' ' ' < \"$3/check-block.txt\"" ${G} ${FW} ${C64} ${CMAKE_CURRENT_BINARY_DIR})
gaccum_cli_test(check-torchtitan-every-2nd-layer 0 "2 peak memory PASS predicted peak [0-9.]+ GiB .*recomputing 50% of the layers, torchtitan config .*selective_ac_option \"2\": 1 in every 2 layers.*recomputed_fraction +0.5 .*verdict: PASS" -- sh -c
  "sed 's/^mode = \"selective\"/mode = \"selective\"\\nselective_ac_option = \"2\"/' \"$1/llama3-70b-torchtitan.toml\" > \"$3/every2.toml\" && \"$0\" check --torchtitan-config \"$3/every2.toml\" --cluster \"$2\" | tr -s '\\n ' ' '" ${G} ${FW} ${C64} ${CMAKE_CURRENT_BINARY_DIR})
gaccum_cli_test(check-framework-refuses-layout 0 "6 gradient sync strategy FAIL DeepSpeed cannot run tp 8 sp x pp 4 1f1b: .*fix: run it on torchtitan.*EXIT1" -- sh -c
  "\"$0\" check --torchtitan-config \"$1/llama3-70b-torchtitan.toml\" --cluster \"$2\" --framework deepspeed > \"$3/check-framework-refuses-layout.txt\" && echo EXIT0 >> \"$3/check-framework-refuses-layout.txt\" || echo EXIT$? >> \"$3/check-framework-refuses-layout.txt\" && tr -s '\\n ' ' ' < \"$3/check-framework-refuses-layout.txt\"" ${G} ${FW} ${C64} ${CMAKE_CURRENT_BINARY_DIR})
gaccum_cli_test(check-two-configs 2 "give the one config the job launches with" --one-line-stderr --
  ${G} check --nemo-config ${FW}/llama3-70b-nemo.yaml --megatron-args ${FW}/llama3-70b-megatron.sh --cluster ${C64})
gaccum_cli_test(check-torchtitan-bad-schedule 2 "pipeline_parallel_schedule 'ZBVZeroBubble': priced here are GPipe, 1F1B and Interleaved1F1B" --one-line-stderr -- sh -c
  "sed 's/\"1F1B\"/\"ZBVZeroBubble\"/' \"$1/llama3-70b-torchtitan.toml\" > \"$2/zbv.toml\" && \"$0\" check --torchtitan-config \"$2/zbv.toml\" --cluster \"$3\""
  ${G} ${FW} ${CMAKE_CURRENT_BINARY_DIR} ${C64})
# torchtitan splits layers that do not divide its stages itself: Llama 3.1 405B's 126 layers on
# pp 8 x v 2 (its Dec 2024 benchmark's job) run as 7, 8 x 14, 7, and check says so.
set(C2048 ${X}/clusters/h100-2048node-ib400.json)
gaccum_cli_test(check-torchtitan-405b-interleaved 0 "9 tensor / pipeline layout PASS tp 8 sp x pp 8 interleaved-1f1b v 2 x dp 8: m = 32 microbatches.*the layers split as torchtitan splits them, model stage by stage: 7, 8 x 14, 7.*verdict: PASS" -- sh -c
  "\"$0\" check --torchtitan-config \"$1/llama3-405b-torchtitan.toml\" --cluster \"$2\" --world-size 512 | tr -s '\\n ' ' '" ${G} ${FW} ${C2048})
# pipeline_parallel_layers_per_stage makes ceil((layers + 2) / per) stages as torchtitan does: 8 on
# 126 layers is 16 stages, 2 per rank (it read "126 layers do not split into pp 8 x stages of 8",
# exit 2); 5 on 70B's 80 is 17 stages, which torchtitan refuses on pp 4, and so does check.
gaccum_cli_test(check-torchtitan-layers-per-stage 0 "9 tensor / pipeline layout PASS tp 8 sp x pp 8 interleaved-1f1b v 2 x dp 8.*7, 8 x 14, 7.*virtual_stages +2 .*pipeline_parallel_layers_per_stage.*verdict: PASS" -- sh -c
  "sed 's/^pipeline_parallel_microbatch_size = 1/pipeline_parallel_microbatch_size = 1\\npipeline_parallel_layers_per_stage = 8/' \"$1/llama3-405b-torchtitan.toml\" > \"$3/per8.toml\" && \"$0\" check --torchtitan-config \"$3/per8.toml\" --cluster \"$2\" --world-size 512 | tr -s '\\n ' ' '" ${G} ${FW} ${C2048} ${CMAKE_CURRENT_BINARY_DIR})
gaccum_cli_test(check-torchtitan-layers-per-stage-refused 2 "pipeline_parallel_layers_per_stage 5: torchtitan makes ceil\\(\\(80 layers \\+ 1 \\+ 1\\) / 5\\) = 17 stages, not a multiple of pipeline_parallel_degree 4" --one-line-stderr -- sh -c
  "sed -e 's/\"1F1B\"/\"Interleaved1F1B\"/' -e 's/^pipeline_parallel_microbatch_size = 1/pipeline_parallel_microbatch_size = 1\\npipeline_parallel_layers_per_stage = 5/' \"$1/llama3-70b-torchtitan.toml\" > \"$2/per5.toml\" && \"$0\" check --torchtitan-config \"$2/per5.toml\" --cluster \"$3\""
  ${G} ${FW} ${CMAKE_CURRENT_BINARY_DIR} ${C64})
# Stages named module by module (module_fqns_per_model_part) are priced as named; the deprecated
# split points are refused with the key to use.
gaccum_cli_test(check-torchtitan-module-fqns 0 "9 tensor / pipeline layout PASS tp 8 sp x pp 4 1f1b \\(layers 19, 21, 21, 19\\) x dp 2.*layers per model stage: 19, 21, 21, 19.*verdict: PASS" -- sh -c
  "\"$0\" check --torchtitan-config \"$1/llama3-70b-torchtitan-fqns.toml\" --cluster \"$2\" | tr -s '\\n ' ' '" ${G} ${FW} ${C64})
gaccum_cli_test(check-torchtitan-split-points 2 "pipeline_parallel_split_points is deprecated in torchtitan .*give the stages as module_fqns_per_model_part" --one-line-stderr -- sh -c
  "sed 's/^pipeline_parallel_microbatch_size = 1/pipeline_parallel_microbatch_size = 1\\npipeline_parallel_split_points = [\"layers.20\", \"layers.40\", \"layers.60\"]/' \"$1/llama3-70b-torchtitan.toml\" > \"$2/split.toml\" && \"$0\" check --torchtitan-config \"$2/split.toml\" --cluster \"$3\""
  ${G} ${FW} ${CMAKE_CURRENT_BINARY_DIR} ${C64})
# NeMo's (Megatron-Core's) uneven ends: num_layers_in_first/last_pipeline_stage.
gaccum_cli_test(check-nemo-uneven-ends 0 "9 tensor / pipeline layout PASS tp 8 sp x pp 4 1f1b \\(first stage 19 layers, last 19\\) x dp 2.*layers per model stage: 19, 21, 21, 19.*verdict: PASS" -- sh -c
  "sed 's/^  num_layers: 80/  num_layers: 80\\n  num_layers_in_first_pipeline_stage: 19\\n  num_layers_in_last_pipeline_stage: 19/' \"$1/llama3-70b-nemo.yaml\" > \"$3/uneven.yaml\" && \"$0\" check --nemo-config \"$3/uneven.yaml\" --cluster \"$2\" | tr -s '\\n ' ' '" ${G} ${FW} ${C64} ${CMAKE_CURRENT_BINARY_DIR})
# As Megatron-LM runs it, the split is refused, naming the one to give; given, torchtitan's split
# prices on the spec as it is; Megatron-LM arguments with uneven ends and virtual stages are refused.
gaccum_cli_test(pipeline-uneven-interleaved-megatron 2 "126 layers do not split evenly over pp 8 x virtual stages 2 = 16 stages: .*--stage-layers 7,...,7 \\(torchtitan's own split.*Megatron-LM runs it given model stage by model stage, as its --pipeline-model-parallel-layout" --one-line-stderr --
  ${G} predict --spec builtin:llama3-405b --cluster ${C2048} -p 512 --tp 8 --pp 8 --virtual-stages 2 --sequence-parallel -b 1 -k 32 --framework megatron)
gaccum_cli_test(pipeline-uneven-interleaved-given 0 "0e +15 .*1 +16 .*7h +15 .*fits yes" -- sh -c
  "\"$0\" predict --spec builtin:llama3-405b --cluster \"$1\" -p 512 --tp 8 --pp 8 --virtual-stages 2 --sequence-parallel --stage-layers 7,...,7 -b 1 -k 32 --checkpointing full --sharding zero3 --framework torchtitan | tr -s '\\n ' ' '" ${G} ${C2048})
gaccum_cli_test(check-megatron-uneven-interleaved 2 "--decoder-first-pipeline-num-layers with 2 virtual pipeline stages: Megatron-LM spreads those layers over the rank's chunks" --one-line-stderr -- sh -c
  "sed 's/--pipeline-model-parallel-size 4/--pipeline-model-parallel-size 4 --virtual-pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 8/' \"$1/llama3-70b-megatron.sh\" > \"$2/uneven-vpp.sh\" && \"$0\" check --megatron-args \"$2/uneven-vpp.sh\" --cluster \"$3\""
  ${G} ${FW} ${CMAKE_CURRENT_BINARY_DIR} ${C64})
# Megatron-LM's own splits: --pipeline-model-parallel-layout (stage by stage, v from it) and
# --account-for-embedding/loss-in-pipeline-split were ignored (priced even, exit 0); now read as
# Megatron-LM reads them, refused where it refuses them, and written by tune for a pick split so.
gaccum_cli_test(check-megatron-layout 0 "9 tensor / pipeline layout PASS tp 8 sp x pp 4 interleaved-1f1b v 2 \\(layers 9, 10 x 6, 11\\) x dp 2.*layers per model stage: 9, 10 x 6, 11.*--pipeline-model-parallel-layout.*verdict: PASS" -- sh -c
  "sed \"s/--pipeline-model-parallel-size 4/--pipeline-model-parallel-size 4 --pipeline-model-parallel-layout 'Et*9|(t*10|)*6t*11L'/\" \"$1/llama3-70b-megatron.sh\" > \"$3/layout.sh\" && \"$0\" check --megatron-args \"$3/layout.sh\" --cluster \"$2\" | tr -s '\\n ' ' '" ${G} ${FW} ${C64} ${CMAKE_CURRENT_BINARY_DIR})
gaccum_cli_test(check-megatron-layout-refused 2 "--pipeline-model-parallel-layout 'Et\\*19\\|t\\*21\\|t\\*21\\|t\\*18L' places 79 transformer layers, --num-layers says 80" --one-line-stderr -- sh -c
  "sed \"s/--pipeline-model-parallel-size 4/--pipeline-model-parallel-size 4 --pipeline-model-parallel-layout 'Et*19|t*21|t*21|t*18L'/\" \"$1/llama3-70b-megatron.sh\" > \"$2/layout79.sh\" && \"$0\" check --megatron-args \"$2/layout79.sh\" --cluster \"$3\""
  ${G} ${FW} ${CMAKE_CURRENT_BINARY_DIR} ${C64})
gaccum_cli_test(check-megatron-account-split 2 "80 layers count as 82 with the embedding and loss, not a multiple of pp 4 \\(Megatron-LM refuses it\\)" --one-line-stderr -- sh -c
  "sed 's/--pipeline-model-parallel-size 4/--pipeline-model-parallel-size 4 --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split/' \"$1/llama3-70b-megatron.sh\" > \"$2/account.sh\" && \"$0\" check --megatron-args \"$2/account.sh\" --cluster \"$3\""
  ${G} ${FW} ${CMAKE_CURRENT_BINARY_DIR} ${C64})
gaccum_cli_test(tune-megatron-layout-completed 0 "--pipeline-model-parallel-layout 'Et\\*9\\|\\(t\\*10\\|\\)\\*6t\\*11L'.*--global-batch-size 128.*layers per model stage: 9, 10 x 6, 11.*verdict: PASS" -- sh -c
  "rm -rf \"$1\" && mkdir -p \"$1\" && sed \"s/--pipeline-model-parallel-size 4/--pipeline-model-parallel-size 4 --pipeline-model-parallel-layout 'Et*9|(t*10|)*6t*11L'/\" \"$2/llama3-70b-megatron.sh\" > \"$1/in.sh\" && \"$0\" tune --megatron-args \"$1/in.sh\" --cluster \"$3\" --global-batch 128 --out \"$1\" --force > \"$1/stdout.txt\" && (cat \"$1/megatron_args.sh\" && \"$0\" check --megatron-args \"$1/megatron_args.sh\" --cluster \"$3\") | tr -s '\\n ' ' '"
  ${G} ${T}/completed-megatron-layout ${FW} ${C64})
gaccum_cli_test(pipeline-megatron-every-stage 0 "plan +tp 8 sp x pp 4 interleaved-1f1b v 2 \\(layers 9, 10 x 6, 11\\).*--pipeline-model-parallel-layout 'Et\\*9\\|\\(t\\*10\\|\\)\\*6t\\*11L'" -- sh -c
  "\"$0\" predict --spec builtin:llama3-70b --cluster \"$1\" -p 64 --tp 8 --sequence-parallel --pp 4 --virtual-stages 2 --stage-layers 9,10,10,10,10,10,10,11 -b 1 -k 32 --sharding zero1 --framework megatron | tr -s '\\n ' ' '" ${G} ${C64})
# tune on each framework config writes the file completed with its pick, and check passes it:
# the file's own layout (micro_batch and m searched at global batch 128), and --tp/--pp auto.
foreach(kind megatron-args:llama3-70b-megatron.sh:megatron_args.sh nemo-config:llama3-70b-nemo.yaml:nemo_config.yaml
             torchtitan-config:llama3-70b-torchtitan.toml:torchtitan.toml)
  string(REPLACE ":" ";" _k "${kind}")
  list(GET _k 0 _flag)
  list(GET _k 1 _in)
  list(GET _k 2 _out)
  gaccum_cli_test(tune-${_flag}-completed 0 "(--global-batch-size 128|global_batch_size: 128|global_batch_size = 128).*verdict: PASS" -- sh -c
    "rm -rf \"$1\" && mkdir -p \"$1\" && \"$0\" tune --${_flag} \"$2/${_in}\" --cluster \"$3\" --global-batch 128 --out \"$1\" --force > \"$1/stdout.txt\" && (cat \"$1/${_out}\" && \"$0\" check --${_flag} \"$1/${_out}\" --cluster \"$3\") | tr -s '\\n ' ' '"
    ${G} ${T}/completed-${_flag} ${FW} ${C64})
  gaccum_cli_test(tune-${_flag}-auto-completed 0 "verdict: PASS" -- sh -c
    "rm -rf \"$1\" && mkdir -p \"$1\" && \"$0\" tune --${_flag} \"$2/${_in}\" --cluster \"$3\" --tp auto --pp auto --global-batch 256 --out \"$1\" --force > \"$1/stdout.txt\" && \"$0\" check --${_flag} \"$1/${_out}\" --cluster \"$3\" | tr -s '\\n ' ' '"
    ${G} ${T}/auto-${_flag} ${FW} ${C64})
endforeach()
# report.html of a pipeline pick: the per-stage memory and bubble-vs-m charts, rendered in
# headless Chromium (exit 77 = skipped without chromium).
gaccum_cli_test(pipeline-report-charts 0 "Peak memory per pipeline stage of the pick.*Pipeline bubble vs microbatches per step" -- sh -c
  "rm -rf \"$1\" && \"$0\" tune --spec \"$2\" --cluster \"$3\" --global-batch 512 --world-sizes 64 --tp 8 --pp 4 --sequence-parallel --precision bf16 --out \"$1\" > /dev/null && tr -s '\\n ' ' ' < \"$1/report.html\""
  ${G} ${T}/report ${S70} ${C64})
find_program(GACCUM_PYTHON3_PIPE NAMES python3)
if(GACCUM_PYTHON3_PIPE)
  add_test(NAME "html: pipeline report renders in headless chromium"
           COMMAND sh -c "rm -rf \"$1\" && \"$0\" tune --spec \"$2\" --cluster \"$3\" --global-batch 512 --world-sizes 64 --tp 8 --pp 4 --sequence-parallel --precision bf16 --out \"$1\" >/dev/null && \"$4\" \"$5\" \"$1/report.html\" --screenshot \"$1/report.png\""
                   $<TARGET_FILE:gaccum-tune> ${T}/report-chromium ${S70} ${C64} ${GACCUM_PYTHON3_PIPE}
                   ${CMAKE_CURRENT_SOURCE_DIR}/integration/html_report_chromium.py)
  set_tests_properties("html: pipeline report renders in headless chromium" PROPERTIES LABELS integration
                       SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
