# Cost-model tests (included from tests/CMakeLists.txt): formulas against hand-computed numbers,
# the profile and spec models on synthetic inputs, the loaders, and `gaccum-tune predict`.
gaccum_test(unit_model LABEL unit
            SOURCES unit/test_model_formulas.cpp unit/test_model_profile.cpp unit/test_model_loaders.cpp
                    unit/test_model_plans.cpp unit/test_cluster_fit.cpp
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
gaccum_cli_test(predict-zero3 0 "plan +zero3 \\(FULL_SHARD, DeepSpeed ZeRO stage 3\\), bf16" -- ${G} predict --spec ${L7} --cluster ${C64}
                -b 1 -k 16 -p 64 --sharding zero3 --strategy every-step)
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
