# Cost-model tests (included from tests/CMakeLists.txt): formulas against hand-computed numbers,
# the profile and spec models on synthetic inputs, the loaders, and `gaccum-tune predict`.
gaccum_test(unit_model LABEL unit
            SOURCES unit/test_model_formulas.cpp unit/test_model_profile.cpp unit/test_model_loaders.cpp
                    unit/test_model_plans.cpp unit/test_cluster_fit.cpp unit/test_gpu_model.cpp
                    unit/test_pipeline.cpp unit/test_hf_config.cpp
            LIBS gaccum::model)
target_compile_definitions(unit_model PRIVATE GACCUM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

# `predict` end to end. The golden file is the `--json` output on the checked-in synthetic
# profile; regenerate after an intended model change with
#   gaccum-tune predict --profile tests/data/small-profile.json -b 4 -k 2 -p 2 --strategy all --json \
#     > tests/data/predict-golden.json
set(G $<TARGET_FILE:gaccum-tune>)
set(D "${CMAKE_CURRENT_SOURCE_DIR}/data")
set(X "${PROJECT_SOURCE_DIR}/examples")
gaccum_cli_test(predict-golden 0 "GOLDEN-OK" -- sh -c
  "\"$0\" predict --profile \"$1/small-profile.json\" -b 4 -k 2 -p 2 --strategy all --json | diff -u \"$1/predict-golden.json\" - && echo GOLDEN-OK"
  ${G} ${D})
gaccum_cli_test(predict-text 0 "every-step vs overlap.*\\+[0-9.]+%" -- ${G} predict --profile ${D}/small-profile.json -b 4 -k 4 -p 2)
gaccum_cli_test(predict-world1 0 "no communication" -- ${G} predict --profile ${D}/small-profile.json -b 8)
gaccum_cli_test(predict-cluster 0 "hierarchical" -- ${G} predict --profile ${D}/small-profile.json
                --cluster ${X}/clusters/ib-cluster-16node.json -b 4 -k 2 -p 64)
gaccum_cli_test(predict-spec 0 "gpt2-small" -- ${G} predict --spec ${X}/specs/gpt2-small.json
                --cluster ${X}/clusters/dgx-h100-1node.json -b 8 -k 4 -p 8 --mfu 0.45)
gaccum_cli_test(predict-spec-json 0 "\"comm_source\": \"hierarchical\"" -- ${G} predict --spec ${X}/specs/gpt-1.3b.json
                --cluster ${X}/clusters/ib-cluster-16node.json -b 4 -k 8 -p 128 --json)
gaccum_cli_test(predict-extrapolate 0 "extrapolated" -- ${G} predict --profile ${D}/small-profile.json -b 64 --extrapolate)
gaccum_cli_test(predict-zero-batch 2 "--micro-batch" --one-line-stderr -- ${G} predict --profile ${D}/small-profile.json -b 0)
gaccum_cli_test(predict-negative-k 2 "--accum-steps" --one-line-stderr -- ${G} predict --profile ${D}/small-profile.json -b 4 -k -2)
gaccum_cli_test(predict-zero-p 2 "--world-size" --one-line-stderr -- ${G} predict --profile ${D}/small-profile.json -b 4 -p 0)
gaccum_cli_test(predict-too-many-ranks 2 "world_size 16 is larger.*dgx-h100-1node" --one-line-stderr -- ${G} predict
                --profile ${D}/small-profile.json --cluster ${X}/clusters/dgx-h100-1node.json -b 4 -p 16)
gaccum_cli_test(predict-above-range 2 "--extrapolate" --one-line-stderr -- ${G} predict --profile ${D}/small-profile.json -b 64)
gaccum_cli_test(predict-malformed 2 "not valid JSON" --one-line-stderr -- ${G} predict --profile ${D}/malformed-profile.json -b 4)
gaccum_cli_test(predict-other-schema 2 "not a gaccum-tune profile" --one-line-stderr -- ${G} predict
                --profile ${X}/clusters/dgx-h100-1node.json -b 4)
gaccum_cli_test(predict-missing-file 2 "error:" --one-line-stderr -- ${G} predict --profile /nonexistent/profile.json -b 4)
gaccum_cli_test(predict-no-source 2 "--profile.*--spec" --one-line-stderr -- ${G} predict -b 4)
gaccum_cli_test(predict-spec-no-cluster 2 "--cluster" --one-line-stderr -- ${G} predict --spec ${X}/specs/gpt2-small.json -b 4)
gaccum_cli_test(predict-bad-strategy 2 "--strategy" --one-line-stderr -- ${G} predict --profile ${D}/small-profile.json -b 4 --strategy sometimes)
gaccum_cli_test(predict-mfu-with-profile 2 "--mfu" --one-line-stderr -- ${G} predict --profile ${D}/small-profile.json -b 4 --mfu 0.5)
gaccum_cli_test(predict-bad-cluster 2 "gpus_per_node" --one-line-stderr -- ${G} predict --profile ${D}/small-profile.json
                --cluster ${D}/bad-cluster.json -b 4 -p 2)

# Plans: sharding, precision and checkpointing (model/plan_cost.hpp).
set(L7 ${X}/specs/llama2-7b.json)
set(C64 ${X}/clusters/h100-8node-ib400.json)
gaccum_cli_test(predict-zero3 0 "plan +zero3 \\(parameters, gradients and optimizer state sharded\\), bf16" -- ${G} predict --spec ${L7} --cluster ${C64}
                -b 1 -k 16 -p 64 --sharding zero3 --strategy every-step)
# Plans carry the frameworks that run them (core/framework.hpp); a framework that refuses the plan
# is bad input naming its rule, and its fixes stay among its plans.
gaccum_cli_test(predict-frameworks 0 "frameworks +runs on FSDP FULL_SHARD. fully_shard\\(reshard_after_forward=True\\). DeepSpeed ZeRO stage 3. torchtitan data_parallel_shard_degree$" --
  ${G} predict --spec ${L7} --cluster ${C64} -b 1 -k 16 -p 64 --sharding zero3 --strategy every-step)
gaccum_cli_test(predict-framework-refuses 2 "--framework deepspeed: DeepSpeed has no no_sync\\(\\) under ZeRO stage 2/3.*\\(--strategy overlap, --sharding zero3\\)" --one-line-stderr --
  ${G} predict --spec ${L7} --cluster ${C64} -b 1 -k 16 -p 64 --sharding zero3 --strategy overlap --framework deepspeed)
gaccum_cli_test(predict-framework-run-as 0 "frameworks +run as: DeepSpeed ZeRO stage 3$" --
  ${G} predict --spec ${L7} --cluster ${C64} -b 1 -k 16 -p 64 --sharding zero3 --strategy every-step --framework deepspeed)
gaccum_cli_test(predict-framework-sync-choice 0 "sync choice: DeepSpeed has no no_sync\\(\\) under ZeRO stage 2/3.*: not a choice on DeepSpeed" --
  ${G} predict --spec ${L7} --cluster ${C64} -b 1 -k 16 -p 64 --sharding zero3 --strategy every-step --framework deepspeed)
gaccum_cli_test(predict-zero3-sync-choice 0 "sync choice: no_sync \\(overlap\\) under zero3 would save 15 of 16" -- ${G} predict
                --spec ${L7} --cluster ${C64} -b 1 -k 16 -p 64 --sharding full_shard --strategy every-step)
gaccum_cli_test(predict-zero1-every-step 2 "zero1 keeps full gradients" --one-line-stderr -- ${G} predict --spec ${L7}
                --cluster ${C64} -b 1 -k 16 -p 64 --sharding zero1 --strategy every-step)
gaccum_cli_test(predict-hsdp-bad-group 2 "multiple of the group size" --one-line-stderr -- ${G} predict --spec ${L7}
                --cluster ${C64} -b 1 -k 16 -p 12 --sharding hsdp:8)
gaccum_cli_test(predict-bad-sharding 2 "--sharding: unknown sharding 'zero4'" --one-line-stderr -- ${G} predict
                --profile ${D}/small-profile.json -b 4 -p 2 --sharding zero4)
gaccum_cli_test(predict-profile-bf16 2 "precision bf16 is not available.*measured fp32" --one-line-stderr -- ${G} predict
                --profile ${D}/small-profile.json -b 4 -p 2 --precision bf16)
gaccum_cli_test(predict-profile-zero2 0 "\"comm_source\": \"allreduce-derived\"" -- ${G} predict --profile ${D}/small-profile.json
                -b 4 -k 4 -p 2 --sharding zero2 --strategy every-step --json)
gaccum_cli_test(predict-spec-unknown-field 2 "unknown field 'gated'.*valid fields are" --one-line-stderr -- sh -c
  "sed 's/\"gated_mlp\"/\"gated\"/' \"$1\" > \"$2/spec-typo.json\" && \"$0\" predict --spec \"$2/spec-typo.json\" --cluster \"$3\" -b 1"
  ${G} ${L7} ${CMAKE_CURRENT_BINARY_DIR} ${C64})
gaccum_cli_test(predict-spec-exabyte 2 "beyond 2\\^60 bytes" --one-line-stderr -- ${G} predict --spec ${X}/specs/gpt-1.3b.json
                --cluster ${X}/clusters/dgx-h100-1node.json -b 1099511627776)

# The GPU compute model behind --spec on a catalogue GPU (model/gpu_compute.hpp), the catalogue
# (`devices`) and the calibration command (`calibrate`, model/calibration.hpp).
set(NA ${D}/cluster-named-a100.json)
set(RUNS ${D}/own-runs.json)
set(PUB ${PROJECT_SOURCE_DIR}/bench/data/published)
set(FL ${CMAKE_CURRENT_SOURCE_DIR}/cli/flat.sh)
gaccum_cli_test(devices-table 0 "h100-sxm-80gb +hopper +989 +1979 +495 +79.6 +3.35 +132 +700.*hopper +GEMM [0-9.]+%.*fitted, 77 runs.*CV median"
                -- ${FL} ${G} devices)
gaccum_cli_test(devices-json 0 "\"id\": \"h200-sxm-141gb\"" -- ${G} devices --json)
gaccum_cli_test(predict-spec-gpu-model 0 "GPU compute +GEMM efficiency [0-9]+%, MFU [0-9]+%; one micro-step: GEMMs .*caching allocator reserve.*compute from the GPU compute model on a100-sxm-80gb \\(named by the cluster\\)"
                -- ${FL} ${G} predict --spec ${X}/specs/gpt2-small.json --cluster ${NA} -b 8 -k 4 -p 16)
gaccum_cli_test(predict-spec-gpu-json 0 "\"kind\": \"gpu\"" -- ${G} predict --spec ${X}/specs/gpt2-small.json
                --cluster ${NA} -b 8 -k 4 -p 16 --json)
gaccum_cli_test(predict-spec-mfu-override 0 "at 45% MFU" -- ${G} predict --spec ${X}/specs/gpt2-small.json
                --cluster ${NA} -b 8 -k 4 -p 16 --mfu 0.45)
gaccum_cli_test(predict-spec-fp8-h100 0 "plan +no sharding, fp8" -- ${G} predict --spec ${X}/specs/gpt2-small.json
                --cluster ${X}/clusters/dgx-h100-1node.json -b 8 -p 8 --precision fp8)
gaccum_cli_test(predict-spec-fp8-a100 2 "fp8" --one-line-stderr -- ${G} predict --spec ${X}/specs/gpt2-small.json
                --cluster ${NA} -b 8 -p 8 --precision fp8)
gaccum_cli_test(predict-cluster-unknown-device 2 "device.id: 'a100-sxm-81gb' is not in the GPU catalogue" --one-line-stderr -- sh -c
  "sed 's/a100-sxm-80gb/a100-sxm-81gb/' \"$1\" > \"$2/cluster-bad-device.json\" && \"$0\" predict --spec \"$3\" --cluster \"$2/cluster-bad-device.json\" -b 1"
  ${G} ${NA} ${CMAKE_CURRENT_BINARY_DIR} ${X}/specs/gpt2-small.json)
gaccum_cli_test(calibrate-evaluate 0 "runs: 4 read, 4 priced, 0 not priced.*h100-mb16 .*evaluated: 4 runs" --
                ${FL} ${G} calibrate --evaluate --rows --runs ${RUNS})
# Megatron-LM's Table 1 (tp, pp, dp on up to 3072 A100): priced with their layouts, never fitted;
# micro_batch and virtual stages not published, so the best predicted that fits (said per row).
gaccum_cli_test(calibrate-published-megatron 0 "runs: 10 read, 10 priced, 0 not priced.*meg21-t1-1008.0b .*tp 8 x pp 64 interleaved-1f1b v 2 x dp 6, micro_batch 1 x m 512 \\(not published: the best predicted that fits\\)" -- sh -c
                "\"$0\" calibrate --evaluate --rows --runs \"$1\" | tr -s '\\n ' ' '" ${G} ${PUB}/megatron-narayanan2021-table1.json)
# A fit of the user's own runs written into their cluster file; predict then prices with it.
gaccum_cli_test(calibrate-into-cluster 0 "under-determined.*wrote the calibration into.*fitted to 2 ampere runs \\(a100-sxm-80gb\\) of" -- ${FL} sh -c
  "cp \"$1\" \"$2/cluster-calibrated.json\" && \"$0\" calibrate --quick --runs \"$3\" --cluster \"$2/cluster-calibrated.json\" && \"$0\" predict --spec \"$4\" --cluster \"$2/cluster-calibrated.json\" -b 8 -p 16"
  ${G} ${NA} ${CMAKE_CURRENT_BINARY_DIR} ${RUNS} ${X}/specs/gpt2-small.json)
gaccum_cli_test(calibrate-json 0 "\"schema\": \"gaccum-tune/calibration-report\"" -- ${G} calibrate --quick --json
                --runs ${RUNS} -o ${CMAKE_CURRENT_BINARY_DIR}/own-calibration.json)
gaccum_cli_test(calibrate-bad-cv 2 "--cross-validate: 'size': expected model, gpu or none" --one-line-stderr -- ${G} calibrate
                --runs ${RUNS} --cross-validate size)
gaccum_cli_test(calibrate-bad-device 2 "runs\\[0\\].device: 'v100' is not in the GPU catalogue" --one-line-stderr -- sh -c
  "sed 's/\"h100-sxm-80gb\"/\"v100\"/' \"$1\" > \"$2/runs-bad-device.json\" && \"$0\" calibrate --evaluate --runs \"$2/runs-bad-device.json\""
  ${G} ${RUNS} ${CMAKE_CURRENT_BINARY_DIR})
# Runs whose model is a HuggingFace config.json (a path relative to the runs file, and inline).
# The third is a tensor x pipeline run: priced with its layout, never fitted.
gaccum_cli_test(calibrate-hf-runs 0 "runs: 3 read, 3 priced, 0 not priced.*llama31-8b-path .*tiny-llama-inline .*llama31-8b-tp2-pp2 .*tp 2 sp x pp 2 1f1b x dp 4, micro_batch 1 x m 16" --
                ${FL} ${G} calibrate --evaluate --rows --runs ${D}/own-runs-hf.json)
gaccum_cli_test(calibrate-layout-held-out 0 "in-sample: 2 runs.*held out \\(tensor/pipeline runs, never fitted\\): 1 runs" --
                ${FL} ${G} calibrate --quick --runs ${D}/own-runs-hf.json)
gaccum_cli_test(calibrate-layout-gpus 2 "runs\\[2\\].gpus: 10 GPUs are not whole replicas of tp 2 x pp 2 x cp 1 = 4" --one-line-stderr -- sh -c
  "sed 's/\"gpus\": 16/\"gpus\": 10/' \"$1\" > \"$2/runs-layout-gpus.json\" && \"$0\" calibrate --evaluate --runs \"$2/runs-layout-gpus.json\""
  ${G} ${D}/own-runs-hf.json ${CMAKE_CURRENT_BINARY_DIR})
gaccum_cli_test(calibrate-hf-no-seq 2 "runs\\[0\\].seq_len: a HuggingFace config.json needs the run's sequence length" --one-line-stderr -- sh -c
  "sed 's/, \"seq_len\": 4096//' \"$1\" > \"$2/runs-hf-no-seq.json\" && \"$0\" calibrate --evaluate --runs \"$2/runs-hf-no-seq.json\""
  ${G} ${D}/own-runs-hf.json ${CMAKE_CURRENT_BINARY_DIR})
gaccum_cli_test(calibrate-unknown-field 2 "runs\\[1\\]: unknown field 'seqlen'" --one-line-stderr -- sh -c
  "sed 's/\"seq_len\": 2048/\"seqlen\": 2048/' \"$1\" > \"$2/runs-hf-typo.json\" && \"$0\" calibrate --evaluate --runs \"$2/runs-hf-typo.json\""
  ${G} ${D}/own-runs-hf.json ${CMAKE_CURRENT_BINARY_DIR})
# A run's "framework" prices it as that framework trains; an unknown one is named.
gaccum_cli_test(calibrate-run-framework 2 "runs\\[1\\]\\.framework.*keras" --one-line-stderr -- sh -c
  "sed 's/\"id\": \"tiny-llama-inline\",/\"id\": \"tiny-llama-inline\", \"framework\": \"keras\",/' \"$1\" > \"$2/runs-hf-fw.json\" && \"$0\" calibrate --evaluate --runs \"$2/runs-hf-fw.json\""
  ${G} ${D}/own-runs-hf.json ${CMAKE_CURRENT_BINARY_DIR})
gaccum_cli_test(calibrate-no-measure 2 "measured: give tokens_per_s_per_gpu or step_time_s" --one-line-stderr -- sh -c
  "sed 's/\"step_time_s\": 0.19/\"steps\": 3/' \"$1\" > \"$2/runs-no-measure.json\" && \"$0\" calibrate --evaluate --runs \"$2/runs-no-measure.json\""
  ${G} ${RUNS} ${CMAKE_CURRENT_BINARY_DIR})
# A cluster whose device is raw numbers (as `cluster fit` writes it) that match a catalogue part:
# the fit is written for that part, the file then names it, and predict prices with the fit.
gaccum_cli_test(calibrate-cluster-matched 0 "peak and memory match h100-sxm-80gb .*\"id\": \"h100-sxm-80gb\".*fitted to [0-9]+ hopper runs \\(h100-sxm-80gb\\) of" -- ${FL} sh -c
  "cp \"$1\" \"$2/cluster-matched.json\" && \"$0\" calibrate --quick --runs \"$3\" --cluster \"$2/cluster-matched.json\" 2>&1 && grep '\"id\"' \"$2/cluster-matched.json\" && \"$0\" predict --spec \"$4\" --cluster \"$2/cluster-matched.json\" -b 8 -p 8"
  ${G} ${X}/clusters/dgx-h100-1node.json ${CMAKE_CURRENT_BINARY_DIR} ${RUNS} ${X}/specs/gpt2-small.json)
gaccum_cli_test(calibrate-cluster-unmatched 2 "device matches no catalogue GPU \\(peak and memory\\)" --one-line-stderr -- sh -c
  "sed 's/\"peak_tflops\": 989.4/\"peak_tflops\": 123.4/' \"$1\" > \"$2/cluster-unmatched.json\" && \"$0\" calibrate --quick --runs \"$3\" --cluster \"$2/cluster-unmatched.json\""
  ${G} ${X}/clusters/dgx-h100-1node.json ${CMAKE_CURRENT_BINARY_DIR} ${RUNS})

# predict says whether the plan fits (issue 38, item 5): against the device memory or
# --memory-cap, with the margin tune and check keep; a plan over it names a layout that fits at
# the same global batch (a smaller micro_batch, else a priced plan change).
set(DGX ${X}/clusters/dgx-h100-1node.json)
gaccum_cli_test(predict-does-not-fit 0 "DOES NOT FIT +peak 254 GiB is 174 GiB over the 79.6 GiB device: micro_batch 2 x accum_steps 4 with --sharding zero3 fits"
                -- ${G} predict --spec ${L7} --cluster ${DGX} -b 8 -k 1 -p 8)
gaccum_cli_test(predict-does-not-fit-smaller-b 0 "DOES NOT FIT +peak .* over the 79.6 GiB device: micro_batch 2 x accum_steps 16 keeps global_batch 256 and fits"
                -- ${G} predict --spec ${L7} --cluster ${DGX} -b 8 -k 4 -p 8 --sharding zero3)
# zero3 under no_sync holds the whole gradient across the window; every-step keeps only the shard.
gaccum_cli_test(predict-does-not-fit-every-step 0 "DOES NOT FIT +peak 138 GiB .*: micro_batch 1 x accum_steps 8 with --strategy every-step fits \\(peak 50.7 GiB\\)"
                -- ${G} predict --model-config ${X}/hf/mixtral-8x7b.json --seq-len 4096
                   --cluster ${X}/clusters/h100-8node-ib400.json -b 1 -k 8 -p 64 --sharding zero3 --precision bf16)
gaccum_cli_test(predict-does-not-fit-one-gpu 0 "DOES NOT FIT .*no smaller micro_batch or plan change at world_size 1 fits \\(weights, gradients and optimizer state alone take 100 GiB\\)"
                -- ${G} predict --spec ${L7} --cluster ${DGX} -b 1 -k 4 -p 1)
gaccum_cli_test(predict-fits-only-just 0 "fits +only just: 2.18 GiB headroom on the --memory-cap 64.0 GiB, inside the 10% margin"
                -- ${G} predict --spec ${L7} --cluster ${DGX} -b 2 -k 4 -p 8 --sharding zero3 --memory-cap 64GiB)
gaccum_cli_test(predict-fits-yes 0 "fits +yes: .* headroom on the 79.6 GiB device" -- ${G} predict --spec ${L7} --cluster ${DGX}
                -b 2 -k 4 -p 8 --sharding zero3)
gaccum_cli_test(predict-fits-json 0 "\"fits\": false" -- ${G} predict --spec ${L7} --cluster ${DGX} -b 8 -k 1 -p 8 --json)
gaccum_cli_test(predict-bad-margin 2 "--margin" --one-line-stderr -- ${G} predict --profile ${D}/small-profile.json -b 4 --margin 150%)
gaccum_cli_test(predict-bad-memory-cap 2 "--memory-cap" --one-line-stderr -- ${G} predict --profile ${D}/small-profile.json -b 4 --memory-cap lots)

# A prediction priced from a point the profile could not confirm says so on its own line and in
# JSON; one priced from confirmed points does not.
gaccum_cli_test(predict-unconfirmed-caveat 0 "CAVEAT +priced from 1 measurement\\(s\\) the profile could not confirm: world_size 2 group" --
  ${G} predict --profile ${D}/disturbed-profile.json -b 32 -k 8 -p 2)
gaccum_cli_test(predict-unconfirmed-json 0 "\"confirmed\": false, .*\"unconfirmed\": \\[ +\"world_size 2 group" --
  ${CMAKE_CURRENT_SOURCE_DIR}/cli/flat.sh ${G} predict --profile ${D}/disturbed-profile.json -b 32 -k 8 -p 2 --json)
gaccum_cli_test(predict-confirmed-no-caveat 0 "^NO-CAVEAT$" -- sh -c
  "\"$0\" predict --profile \"$1/disturbed-profile.json\" -b 32 -k 16 -p 1 | grep -q CAVEAT || echo NO-CAVEAT" ${G} ${D})

# A HuggingFace config.json as the model (model/hf_config.hpp, examples/hf/): tune on Llama-3.1-8B's
# config at 8192 tokens picks exactly what the built-in llama3-8b does (all but the model's name);
# --spec recognises a config by its model_type; MoE says expert parallelism is not planned; errors
# name the field.
set(HF ${X}/hf)
gaccum_cli_test(hf-tune-same-pick 0 "Recommendation: Use micro_batch .*SAME-PICK" -- sh -c
  "\"$0\" tune --model-config \"$1/llama-3.1-8b.json\" --seq-len 8192 --cluster \"$2\" --global-batch 256 --force --out \"$3/hf-a\" > \"$3/hf-a.txt\" && \"$0\" tune --spec builtin:llama3-8b --cluster \"$2\" --global-batch 256 --force --out \"$3/hf-b\" > \"$3/hf-b.txt\" && sed -e 1d -e '/^Reports/,$d' \"$3/hf-a.txt\" > \"$3/hf-a.pick\" && sed -e 1d -e '/^Reports/,$d' \"$3/hf-b.txt\" > \"$3/hf-b.pick\" && diff -u \"$3/hf-a.pick\" \"$3/hf-b.pick\" && grep '^Recommendation' \"$3/hf-a.pick\" | tr '\\n' ' ' && echo SAME-PICK"
  ${G} ${HF} ${X}/clusters/dgx-h100-1node.json ${CMAKE_CURRENT_BINARY_DIR})
# The same for Mistral-7B and GPT-2 against a spec written by hand from their config.json
# (tests/data/hf-equivalent/; Qwen2's q/k/v biases and Mixtral's experts have no spec field): the
# ranked table and the recommendation are identical.
foreach(m "mistral-7b;4096;512" "gpt2;1024;256")
  list(GET m 0 name)
  list(GET m 1 seq)
  list(GET m 2 batch)
  gaccum_cli_test(hf-same-pick-${name} 0 "Recommendation: Use micro_batch .*SAME-PICK" -- sh -c
    "\"$0\" tune --model-config \"$1/${name}.json\" --seq-len ${seq} --cluster \"$2\" --global-batch ${batch} --force --out \"$3/hf-${name}-a\" > \"$3/hf-${name}-a.txt\" && \"$0\" tune --spec \"$4/${name}.json\" --cluster \"$2\" --global-batch ${batch} --force --out \"$3/hf-${name}-b\" > \"$3/hf-${name}-b.txt\" && sed '/^Reports/,$d' \"$3/hf-${name}-a.txt\" | sed -n '/^rank /,$p' > \"$3/hf-${name}-a.pick\" && sed '/^Reports/,$d' \"$3/hf-${name}-b.txt\" | sed -n '/^rank /,$p' > \"$3/hf-${name}-b.pick\" && [ -s \"$3/hf-${name}-a.pick\" ] && diff -u \"$3/hf-${name}-a.pick\" \"$3/hf-${name}-b.pick\" && grep '^Recommendation' \"$3/hf-${name}-a.pick\" | tr '\\n' ' ' && echo SAME-PICK"
    ${G} ${HF} ${X}/clusters/h100-8node-ib400.json ${CMAKE_CURRENT_BINARY_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/data/hf-equivalent)
endforeach()
# Mistral 7B's 4096-token sliding window at a 32768-token sequence: FlashAttention computes the
# window's causal pairs only (docs/DESIGN.md, Workloads).
gaccum_cli_test(hf-mistral-sliding-window 0 "sliding-window attention: a query attends to the last 4096 of the 32768 tokens on 100% of the layers: 4096 keys per query on average instead of 32768" --
  ${G} predict --model-config ${HF}/mistral-7b.json --seq-len 32768 --cluster ${X}/clusters/dgx-h100-1node.json
  -b 1 -k 8 -p 8 --sharding zero3 --checkpointing full)
gaccum_cli_test(hf-spec-detects-config 0 "spec: 124439808 parameters" -- ${G} predict --spec ${HF}/gpt2.json
                --cluster ${X}/clusters/dgx-h100-1node.json -b 8 -k 4 -p 8)
gaccum_cli_test(hf-mixtral-experts 0 "memory holds all 46702792704 parameters, compute prices the 12879925248 a token passes through; expert parallelism is not planned" --
  ${CMAKE_CURRENT_SOURCE_DIR}/cli/flat.sh ${G} predict --model-config ${HF}/mixtral-8x7b.json --seq-len 4096
  --cluster ${X}/clusters/h100-8node-ib400.json -b 1 -k 8 -p 64 --sharding zero3 --strategy every-step)
gaccum_cli_test(hf-check 0 "spec +.*llama-3.1-8b.json +flag --model-config.*verdict: PASS" -- sh -c
  "\"$0\" check --model-config \"$1/llama-3.1-8b.json\" --seq-len 8192 --cluster \"$2\" -b 1 -k 32 -p 8 --strategy every-step --sharding zero3 | tr -s '\\n ' ' '"
  ${G} ${HF} ${X}/clusters/dgx-h100-1node.json)
gaccum_cli_test(hf-bad-kv-heads 2 "--model-config .*: num_key_value_heads 7 does not divide num_attention_heads 32$" --one-line-stderr -- sh -c
  "sed 's/\"num_key_value_heads\": 8/\"num_key_value_heads\": 7/' \"$1\" > \"$2/hf-kv7.json\" && \"$0\" predict --model-config \"$2/hf-kv7.json\" --cluster \"$3\" -b 1"
  ${G} ${HF}/llama-3.1-8b.json ${CMAKE_CURRENT_BINARY_DIR} ${X}/clusters/dgx-h100-1node.json)
# Qwen3 (q/k norms per head) read from its hub config.json: 8,190,735,360 parameters (by hand in
# tests/unit/test_hf_config.cpp), priced on the GPU compute model.
gaccum_cli_test(hf-qwen3-predict 0 "GPU compute +GEMM efficiency.*spec: 8190735360 parameters"
                -- sh -c "\"$0\" predict --model-config \"$1\" --seq-len 4096 --cluster \"$2\" -b 1 -k 16 -p 8 --sharding zero3 | tr -s '\\n ' ' '"
                ${G} ${HF}/qwen3-8b.json ${X}/clusters/dgx-h100-1node.json)
gaccum_cli_test(hf-unsupported-type 2 "model_type 'bert' is not supported: use one of llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3_text, phi3, olmo2, gpt2, gpt_neox, starcoder2, falcon, mixtral, qwen2_moe, qwen3_moe" --one-line-stderr -- sh -c
  "sed 's/\"model_type\": \"llama\"/\"model_type\": \"bert\"/' \"$1\" > \"$2/hf-bert.json\" && \"$0\" tune --model-config \"$2/hf-bert.json\" --cluster \"$3\" --global-batch 64 --force --out \"$2/hf-bert\""
  ${G} ${HF}/llama-3.1-8b.json ${CMAKE_CURRENT_BINARY_DIR} ${X}/clusters/dgx-h100-1node.json)
gaccum_cli_test(hf-model-config-not-hf 2 "not a HuggingFace config.json \\(it has no model_type\\): pass a gaccum-tune spec with --spec" --one-line-stderr --
  ${G} predict --model-config ${X}/specs/gpt2-small.json --cluster ${X}/clusters/dgx-h100-1node.json -b 1)
gaccum_cli_test(hf-seq-len-spec-file 2 "--seq-len: applies to a HuggingFace config.json" --one-line-stderr --
  ${G} predict --spec ${X}/specs/gpt2-small.json --seq-len 512 --cluster ${X}/clusters/dgx-h100-1node.json -b 1)

# Per-op selective recompute (torchtitan's op SAC, activation_checkpoint.selective_ac_option
# "op"): priced when named; frameworks without it refuse it naming the fix; tune writes it into
# torchtitan.toml and check reads it back as selective-op.
gaccum_cli_test(predict-selective-op 0 "plan +zero3 .*bf16, selective-op activation checkpointing .*peak memory .*activations [0-9.]+ GiB" -- ${FL}
                ${G} predict --spec ${X}/specs/llama2-7b.json --cluster ${DGX} -b 2 -p 8 --sharding zero3 --checkpointing selective-op)
gaccum_cli_test(predict-selective-op-deepspeed 2 "--framework deepspeed: DeepSpeed's activation checkpointing recomputes whole layers, not per-op selective; predict --checkpointing full instead" --one-line-stderr --
                ${G} predict --spec ${X}/specs/llama2-7b.json --cluster ${DGX} -b 2 -p 8 --sharding zero3 --strategy every-step --checkpointing selective-op --framework deepspeed)
gaccum_cli_test(tune-emit-torchtitan-selective-op 0 "mode = \"selective\" selective_ac_option = \"op\".*checkpointing +selective-op +torchtitan config .*selective_ac_option \"op\".*verdict: PASS" -- sh -c
  "rm -rf \"$2/tt-op\" && \"$0\" tune --spec \"$1\" --cluster \"$3\" --global-batch 64 --checkpointing selective-op --emit torchtitan --out \"$2/tt-op\" > /dev/null && cat \"$2/tt-op/torchtitan.toml\" | tr -s '\\n ' ' ' && \"$0\" check --torchtitan-config \"$2/tt-op/torchtitan.toml\" --spec \"$1\" --cluster \"$3\" | tr -s '\\n ' ' '"
  ${G} ${X}/specs/llama2-7b.json ${CMAKE_CURRENT_BINARY_DIR} ${DGX})
# A torchtitan job's tune searches its per-op selective recompute beside none and full.
gaccum_cli_test(tune-torchtitan-searches-selective-op 0 "framework torchtitan .*every-step zero3 bf16 selective-op" -- ${FL}
                ${G} tune --spec builtin:llama3-8b --cluster ${DGX} --global-batch 64 --framework torchtitan --force --out ${CMAKE_CURRENT_BINARY_DIR}/tt-search)
gaccum_cli_test(tune-selective-op-deepspeed 2 "--checkpointing selective-op on DeepSpeed \\(flag --framework\\): DeepSpeed's activation checkpointing recomputes whole layers, not per-op selective; tune with --checkpointing full instead" --one-line-stderr --
                ${G} tune --spec ${X}/specs/llama2-7b.json --cluster ${DGX} --global-batch 64 --framework deepspeed --checkpointing selective-op --force --out ${CMAKE_CURRENT_BINARY_DIR}/ds-op)
# The loss over a large vocabulary is a memory term to act on: the note gives it per sample and
# what a fused cross-entropy would hold (4096 x 128256 logits: 12 B each = 5.87 GiB, 4 B = 1.96 GiB).
gaccum_cli_test(predict-loss-note 0 "spec: loss fp32: PyTorch's cross-entropy on fp32 logits holds 8 bytes per logit at its peak .*plus a 4-byte transient block: 5.87 GiB per sample of 4096 tokens over the 128256-token vocabulary.*holds 2 \\+ 2: 1.96 GiB"
                -- ${G} predict --model-config ${X}/hf/llama-3.1-8b.json --seq-len 4096 --cluster ${X}/clusters/h100-8node-ib400.json -b 1 -k 8 -p 64 --sharding zero1)
# The job's framework prices its own loss where the spec does not say: Megatron-LM's vocab-parallel
# cross-entropy (4 + 4 bytes per logit: 3.91 GiB per sample of 4096 x 128256), named in the note.
gaccum_cli_test(predict-loss-framework 0 "spec: loss vocab-parallel \\(set by Megatron-LM, the job's framework: flag --framework\\): Megatron-LM's vocab-parallel cross-entropy holds 4 bytes per logit .*3.91 GiB per sample of 4096 tokens"
                -- ${G} predict --model-config ${X}/hf/llama-3.1-8b.json --seq-len 4096 --cluster ${X}/clusters/h100-8node-ib400.json -b 1 -k 8 -p 64 --sharding zero1 --framework megatron)
