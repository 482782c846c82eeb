# Tuner tests (included from tests/CMakeLists.txt): the search on a closed-form fake cost model
# (unit/fake_cost_model.hpp) against hand-computed optima and constraint edge cases.
gaccum_test(unit_tuner LABEL unit SOURCES unit/test_tuner.cpp unit/test_noise_source.cpp LIBS gaccum::tuner)

# `gaccum-tune tune` end to end on the checked-in synthetic profile (tests/data/small-profile.json:
# a CPU "device" of 4 GiB, so a cap in bytes makes memory bind), its reports and its errors.
set(G $<TARGET_FILE:gaccum-tune>)
set(D "${CMAKE_CURRENT_SOURCE_DIR}/data")
set(X "${PROJECT_SOURCE_DIR}/examples")
set(T "${CMAKE_CURRENT_BINARY_DIR}/tune-out")
gaccum_cli_test(tune-profile 0 "Recommendation: Use micro_batch 4 with accum_steps 64 on 2 ranks" -- sh -c
  "rm -rf \"$1\" && \"$0\" tune --profile \"$2/small-profile.json\" --memory-cap 15MiB --out \"$1\""
  ${G} ${T}/basic ${D})
gaccum_cli_test(tune-files 0 "FILES-OK" -- sh -c
  "rm -rf \"$1\" && \"$0\" tune --profile \"$2/small-profile.json\" --memory-cap 15MiB --out \"$1\" >/dev/null && head -1 \"$1/result.csv\" | grep -q '^micro_batch,accum_steps,world_size,global_batch,strategy,sharding,precision,checkpointing,step_time_s' && grep -q '\"schema\": \"gaccum-tune/tune-result\"' \"$1/result.json\" && grep -q 'Content-Security-Policy' \"$1/report.html\" && test -s \"$1/result.md\" && echo FILES-OK"
  ${G} ${T}/files ${D})
gaccum_cli_test(tune-no-clobber 2 "--force" --one-line-stderr -- sh -c
  "rm -rf \"$1\" && \"$0\" tune --profile \"$2/small-profile.json\" --out \"$1\" >/dev/null && \"$0\" tune --profile \"$2/small-profile.json\" --out \"$1\""
  ${G} ${T}/clobber ${D})
gaccum_cli_test(tune-force 0 "FORCE-OK" -- sh -c
  "rm -rf \"$1\" && \"$0\" tune --profile \"$2/small-profile.json\" --out \"$1\" >/dev/null && \"$0\" tune --profile \"$2/small-profile.json\" --out \"$1\" --force >/dev/null && echo FORCE-OK"
  ${G} ${T}/force ${D})
gaccum_cli_test(tune-json 0 "\"schema_version\": 3" -- sh -c
  "rm -rf \"$1\" && \"$0\" tune --profile \"$2/small-profile.json\" --json --out \"$1\""
  ${G} ${T}/json ${D})
gaccum_cli_test(tune-range-lr 0 "RANGE-LR-OK" -- sh -c
  "rm -rf \"$1\" && mkdir -p \"$1\" && \"$0\" tune --profile \"$2/small-profile.json\" --global-batch-range 256-1024 --lr-ref 3e-4@64 --optimizer adamw --json --out \"$1\" > \"$1/stdout.json\" && grep -q '\"rule\": \"square-root\"' \"$1/stdout.json\" && grep -q '\"warmup\": true' \"$1/stdout.json\" && echo RANGE-LR-OK"
  ${G} ${T}/range ${D})
gaccum_cli_test(tune-spec-cluster 0 "gpt2-small.*world_size 1..8" -- sh -c
  "rm -rf \"$1\" && \"$0\" tune --spec \"$2/specs/gpt2-small.json\" --cluster \"$2/clusters/dgx-h100-1node.json\" --global-batch 512 --objective cost --out \"$1\""
  ${G} ${T}/spec ${X})
gaccum_cli_test(tune-infeasible-memory 1 "memory cap binds.*raise --memory-cap to" --one-line-stderr -- sh -c
  "rm -rf \"$1\" && \"$0\" tune --profile \"$2/small-profile.json\" --memory-cap 5MiB --out \"$1\""
  ${G} ${T}/inf-mem ${D})
gaccum_cli_test(tune-infeasible-prime 1 "raise --max-accum-steps to 509.*lower --global-batch to" --one-line-stderr -- sh -c
  "rm -rf \"$1\" && \"$0\" tune --profile \"$2/small-profile.json\" --global-batch 509 --memory-cap 15MiB --out \"$1\""
  ${G} ${T}/inf-prime ${D})
gaccum_cli_test(tune-bad-cap 2 "--memory-cap" --one-line-stderr -- ${G} tune --profile ${D}/small-profile.json --memory-cap lots --out ${T}/bad)
gaccum_cli_test(tune-bad-objective 2 "--objective" --one-line-stderr -- ${G} tune --profile ${D}/small-profile.json --objective fastest --out ${T}/bad)
gaccum_cli_test(tune-bad-lr 2 "--lr-ref" --one-line-stderr -- ${G} tune --profile ${D}/small-profile.json --lr-ref 3e-4 --out ${T}/bad)
gaccum_cli_test(tune-two-targets 2 "--global-batch" --one-line-stderr -- ${G} tune --profile ${D}/small-profile.json --global-batch 64 --global-batch-range 64-128 --out ${T}/bad)
gaccum_cli_test(tune-two-sources 2 "at most one of" --one-line-stderr -- ${G} tune --profile ${D}/small-profile.json --spec ${X}/specs/gpt2-small.json --out ${T}/bad)
gaccum_cli_test(tune-bad-optimizer 2 "--optimizer" --one-line-stderr -- ${G} tune --profile ${D}/small-profile.json --optimizer rmsprop --out ${T}/bad)
gaccum_cli_test(tune-help 0 "Defaults: --workload gpt-tiny --global-batch 512" -- ${G} tune --help)
gaccum_cli_test(tune-reprofile-with-profile 2 "--reprofile" --one-line-stderr -- ${G} tune --profile ${D}/small-profile.json --reprofile --out ${T}/bad)

# The profile-first path: the default workload is profiled once (real ranks, ~30 s budget), then
# the second run finds it in the cache keyed by (workload hash, hardware, library versions).
gaccum_cli_test(tune-profile-first-cached 0 "CACHED-OK" -- sh -c
  "rm -rf \"$1\" && export XDG_CACHE_HOME=\"$1/cache\" && \"$0\" tune --out \"$1/a\" >/dev/null && \"$0\" tune --out \"$1/b\" | grep -q 'Profile: cached' && ls \"$1/cache/gaccum-tune/profiles/\" | grep -q '^gpt-tiny-[0-9a-f]*\\.json$' && echo CACHED-OK"
  ${G} ${T}/first)
set_tests_properties("cli: tune-profile-first-cached" PROPERTIES TIMEOUT 900)

# Plans: the LLaMA-2-7B job on 64 H100s (8 nodes x 8, 400 Gb/s InfiniBand) at global_batch 1024:
# DDP needs ~130 GiB per rank, so the pick is a sharded plan, explained against the others.
set(L7 ${X}/specs/llama2-7b.json)
set(C64 ${X}/clusters/h100-8node-ib400.json)
gaccum_cli_test(tune-llama2-7b 0 "Plan: +(zero[123]|hsdp:8) .*Other plans.*sharding none: nothing feasible" --
  ${CMAKE_CURRENT_SOURCE_DIR}/cli/flat.sh ${G} tune --spec ${L7} --cluster ${C64} --global-batch 1024 --force --out ${T}/llama2-7b)
gaccum_cli_test(tune-llama2-7b-ddp-pinned 1 "memory cap binds.*smallest change: --sharding (zero[123]|hsdp:8)" --one-line-stderr --
  ${G} tune --spec ${L7} --cluster ${C64} --global-batch 1024 --sharding none --out ${T}/llama2-7b-ddp)
gaccum_cli_test(tune-cap-above-device 2 "--memory-cap: 300 GiB is above the device's.*--force-memory-cap" --one-line-stderr --
  ${G} tune --spec ${L7} --cluster ${C64} --global-batch 1024 --memory-cap 300GiB --out ${T}/cap)
gaccum_cli_test(tune-profile-sharded-pinned 0 "zero2" -- sh -c
  "rm -rf \"$1\" && \"$0\" tune --profile \"$2/small-profile.json\" --memory-cap 15MiB --sharding zero2 --out \"$1\""
  ${G} ${T}/profile-zero2 ${D})

# A user's TorchScript model end to end with the profile-first path: tune profiles it (with a
# chosen CPU device size) and caches it; predict and check reuse that cache.
set(_ts "${GACCUM_FIXTURE_DIR}/tiny_cnn.pt")
gaccum_cli_test(tune-predict-check-torchscript 0 "TS-OK" -- sh -c
  "rm -rf \"$1\" && export XDG_CACHE_HOME=\"$1/cache\" && \"$0\" tune --torchscript \"$2\" --input-shape 3,16,16 --device-memory 64MiB --global-batch 64 --out \"$1/out\" | grep -q 'Recommendation: Use micro_batch' && \"$0\" predict --torchscript \"$2\" --input-shape 3,16,16 --device-memory 64MiB -b 4 -k 2 -p 2 2>&1 | grep -q 'profile cached' && \"$0\" check --torchscript \"$2\" --input-shape 3,16,16 --device-memory 64MiB -b 4 -k 2 -p 2 | grep -q 'peak memory  *PASS' && echo TS-OK"
  ${G} ${T}/torchscript ${_ts})
set_tests_properties("cli: tune-predict-check-torchscript" PROPERTIES FIXTURES_REQUIRED torchscript TIMEOUT 300)
gaccum_cli_test(tune-torchscript-and-profile 2 "at most one of --workload / --torchscript" --one-line-stderr --
  ${G} tune --torchscript model.pt --profile ${D}/small-profile.json --out ${T}/bad)
gaccum_cli_test(tune-device-memory-with-profile 2 "--device-memory applies to the profile-first path" --one-line-stderr --
  ${G} tune --profile ${D}/small-profile.json --device-memory 1GiB --out ${T}/bad)
gaccum_cli_test(predict-input-shape-without-torchscript 2 "--input-shape, --input and --target apply to --torchscript only" --one-line-stderr --
  ${G} predict --workload gpt-tiny --input-shape 3,8,8 -b 1)

# tune --deepspeed-config (check/deepspeed_tune.hpp): "auto" fields filled with the pick, numeric
# ones pinned, every other field kept in its order; a config no world size satisfies is exit 2.
set(DS "${CMAKE_CURRENT_SOURCE_DIR}/data/deepspeed")
gaccum_cli_test(tune-deepspeed-auto 0 "DS-AUTO-OK" -- sh -c
  "rm -rf \"$1\" && mkdir -p \"$1\" && \"$0\" tune --profile \"$2/small-profile.json\" --memory-cap 15MiB --deepspeed-config \"$3/auto.json\" --out \"$1\" > \"$1/stdout.txt\" && grep -q 'Use micro_batch 4 with accum_steps 64 on 2 ranks' \"$1/stdout.txt\" && tr -s '\\n ' ' ' < \"$1/stdout.txt\" | grep -q 'DeepSpeed config completed with the pick: [^ ]*/deepspeed_config.json (train_batch_size 512 = train_micro_batch_size_per_gpu 4 x gradient_accumulation_steps 64 x world_size 2' && f=\"$1/deepspeed_config.json\" && head -2 \"$f\" | grep -q '\"train_batch_size\": 512' && grep -q '\"train_micro_batch_size_per_gpu\": 4' \"$f\" && grep -q '\"gradient_accumulation_steps\": 64' \"$f\" && grep -q '\"enabled\": \"auto\"' \"$f\" && tr -s '\\n ' ' ' < \"$1/stdout.txt\" | grep -q 'precision bf16 was assumed from \"auto\", but this profile measured fp32 .*: searched at fp32 instead' && grep -q '\"lr\": \"auto\"' \"$f\" && grep -q '\"weight_decay\": 0.01' \"$f\" && tail -2 \"$f\" | grep -q '\"steps_per_print\": 7' && grep -q 'deepspeed_config.json' \"$1/report.html\" && grep -q '\"deepspeed_config\"' \"$1/result.json\" && echo DS-AUTO-OK"
  ${G} ${T}/ds-auto ${D} ${DS})
gaccum_cli_test(tune-deepspeed-numeric 0 "DS-NUMERIC-OK" -- sh -c
  "rm -rf \"$1\" && mkdir -p \"$1\" && \"$0\" tune --profile \"$2/small-profile.json\" --memory-cap 15MiB --deepspeed-config \"$3/numeric.json\" --out \"$1\" > \"$1/stdout.txt\" && grep -q 'Use micro_batch 4 with accum_steps 32 on 2 ranks (overlap), global_batch 256' \"$1/stdout.txt\" && f=\"$1/deepspeed_config.json\" && head -2 \"$f\" | grep -q '\"steps_per_print\": 100' && grep -q '\"train_batch_size\": 256' \"$f\" && grep -q '\"gradient_accumulation_steps\": 32' \"$f\" && tr -s '\\n ' ' ' < \"$1/stdout.txt\" | grep -q 'numeric.json pins global_batch 256 (train_batch_size), micro_batch 4 (train_micro_batch_size_per_gpu), sharding none (zero_optimization.stage 0), strategy overlap' && echo DS-NUMERIC-OK"
  ${G} ${T}/ds-numeric ${D} ${DS})
# All three numeric: world_size = 256 / (4 x 32) = 2 is pinned too; the search has one setting.
gaccum_cli_test(tune-deepspeed-all-numeric 0 "Use micro_batch 4 with accum_steps 32 on 2 ranks \\(fused\\).*world_size 2 " --
  ${CMAKE_CURRENT_SOURCE_DIR}/cli/flat.sh ${G} tune --profile ${D}/small-profile.json --memory-cap 15MiB
  --deepspeed-config ${DS}/all-numeric.json --force --out ${T}/ds-all-numeric)
gaccum_cli_test(tune-deepspeed-indivisible 2
  "indivisible.json: train_batch_size 100 is not a multiple of train_micro_batch_size_per_gpu x gradient_accumulation_steps = 32.*e\\.g\\. 96"
  --one-line-stderr -- ${G} tune --profile ${D}/small-profile.json --deepspeed-config ${DS}/indivisible.json --force --out ${T}/ds-bad)
gaccum_cli_test(tune-deepspeed-flag-clash 2 "--global-batch 128 contradicts .*numeric.json: train_batch_size 256"
  --one-line-stderr -- ${G} tune --profile ${D}/small-profile.json --global-batch 128 --deepspeed-config ${DS}/numeric.json --force --out ${T}/ds-clash)
gaccum_cli_test(tune-deepspeed-missing 2 "--deepspeed-config" --one-line-stderr --
  ${G} tune --profile ${D}/small-profile.json --deepspeed-config ${DS}/no-such.json --force --out ${T}/ds-missing)

# Noise-scale reuse (cli/noise_scale_cache.hpp): without a measurement the report names the
# validate command; validate records B_simple for the workload (b=2 vs B=32: a wider spread
# than the profile's 8x sweep), and tune and check on the same workload then use it.
gaccum_cli_test(noise-scale-reuse 0 "NOISE-REUSE-OK" -- sh -c
  "rm -rf \"$1\" && mkdir -p \"$1\" && export XDG_CACHE_HOME=\"$1/cache\" && \"$0\" validate --workload mlp-small -b 2 -k 8 -p 2 --steps 6 -o \"$1/v.json\" > \"$1/validate.txt\" && grep -q 'noise scale recorded in .*/gaccum-tune/profiles/noise-[0-9a-f]*\\.json' \"$1/validate.txt\" && \"$0\" tune --workload mlp-small --global-batch 64 --out \"$1/t\" > \"$1/tune.txt\" && tr -s '\\n ' ' ' < \"$1/tune.txt\" | grep -q 'B_noise ~ [0-9]* (McCandlish et al. 2018. B_noise from measured by .gaccum-tune validate -b 2 -k 8 -p 2.' && grep -q 'measured by `gaccum-tune validate -b 2 -k 8 -p 2`' \"$1/t/result.json\" && ( \"$0\" check --workload mlp-small -b 2 -k 8 -p 2 --json > \"$1/check.json\" || true ) && grep -q '\"noise_scale_source\": \"measured by `gaccum-tune validate -b 2 -k 8 -p 2`' \"$1/check.json\" && echo NOISE-REUSE-OK"
  ${G} ${T}/noise-reuse)
set_tests_properties("cli: noise-scale-reuse" PROPERTIES TIMEOUT 900)
# A profile without gradient statistics (tests/data/small-profile.json less its grad_norms).
gaccum_cli_test(noise-scale-hint 0 "critical batch size unknown: no gradient noise scale for this workload. measure it with .gaccum-tune validate --workload [^ ]* -b [0-9]* -k [0-9]* -p [0-9]*." --
  sh -c "rm -rf \"$1\" && mkdir -p \"$1\" && sed '/\"grad_norms\": \\[/,/^ \\]/d' \"$2\" > \"$1/p.json\" && ! grep -q grad_norms \"$1/p.json\" && XDG_CACHE_HOME=\"$1/cache\" \"$0\" tune --profile \"$1/p.json\" --memory-cap 15MiB --out \"$1/t\" | tr -s '\\n ' ' '"
  ${G} ${T}/noise-hint ${D}/small-profile.json)
gaccum_cli_test(tune-deepspeed-strategy-clash 2 "--strategy every-step contradicts .*numeric.json: zero_optimization.stage 0 with overlap_comm runs strategy overlap"
  --one-line-stderr -- ${G} tune --profile ${D}/small-profile.json --strategy every-step --deepspeed-config ${DS}/numeric.json --force --out ${T}/ds-clash2)

# The journey connected (issue 38, item 7): tune ends with the command to run on its pick, as
# printed (validate --from-tune for a profiled model; check with the pick's plan for a spec, which
# cannot run here), also in result.json. The spec case runs the printed check and expects it to pass.
set(_FL ${CMAKE_CURRENT_SOURCE_DIR}/cli/flat.sh)
gaccum_cli_test(tune-next-command-profile 0 "Next: run the pick for real and check the accumulated gradient: +gaccum-tune validate --from-tune .*/next-profile/result.json --top 1 *$"
                -- ${_FL} ${G} tune --profile ${D}/small-profile.json --global-batch 32 --out ${T}/next-profile --force)
gaccum_cli_test(tune-next-command-spec 0 "NEXT-OK.*verdict: (PASS|WARN)" -- ${_FL} sh -c
  "\"$0\" tune --spec \"$1\" --cluster \"$2\" --global-batch 256 --out \"$3\" --force > \"$3.txt\" && grep -q '\"next_command\": \"gaccum-tune check --spec' \"$3/result.json\" && echo NEXT-OK && cmd=$(tail -n 1 \"$3.txt\") && eval \"\\\"$0\\\" \${cmd#*gaccum-tune }\""
  ${G} ${L7} ${X}/clusters/dgx-h100-1node.json ${T}/next-spec)

# Trust travels with the answer (tests/data/disturbed-profile.json: the world_size 2 group was
# measured while 0.92 cores were busy elsewhere): the caveat stands beside the recommendation in
# the terminal, the HTML and result.json, naming the points and by how much the pick leads.
gaccum_cli_test(tune-trust-caveat 0 "TRUST-OK" -- sh -c
  "rm -rf \"$1\" && mkdir -p \"$1\" && \"$0\" tune --profile \"$2/disturbed-profile.json\" --out \"$1\" > \"$1/stdout.txt\" && tr -s '\\n ' ' ' < \"$1/stdout.txt\" | grep -q 'S_min steps.*CAVEAT: the pick beat configs priced from measurements the profile could not confirm (world_size 2 group (compute, optimizer, allreduce, overlap): measured while other processes kept 0.92 cores busy)..the best of them is #3 b=32 k=8 p=2 overlap (285.5 samples/s, peak 22.9 MiB), 15.2% behind the pick' && grep -q 'class=\"caveat\"' \"$1/report.html\" && tr -d '\\n ' < \"$1/result.json\" | grep -q '\"trust\":{\"ranking_confirmed\":false,\"pick_confirmed\":true' && echo TRUST-OK"
  ${G} ${T}/trust ${D})
gaccum_cli_test(tune-quiet-profile-no-caveat 0 "NO-CAVEAT-OK" -- sh -c
  "rm -rf \"$1\" && mkdir -p \"$1\" && \"$0\" tune --profile \"$2/small-profile.json\" --memory-cap 15MiB --out \"$1\" > \"$1/stdout.txt\" && ! grep -q CAVEAT \"$1/stdout.txt\" && tr -d '\\n ' < \"$1/result.json\" | grep -q '\"caveat\":null' && echo NO-CAVEAT-OK"
  ${G} ${T}/quiet ${D})

# Plans carry their frameworks (CSV column, the recommendation); --framework narrows the search to
# the plans the framework runs, and a DeepSpeed config means DeepSpeed.
gaccum_cli_test(tune-frameworks-64 0 "FRAMEWORKS-OK" -- sh -c
  "rm -rf \"$1\" && mkdir -p \"$1\" && \"$0\" tune --spec \"$2/specs/llama2-7b.json\" --cluster \"$2/clusters/h100-8node-ib400.json\" --global-batch 512 --out \"$1\" > \"$1/stdout.txt\" && tr -s '\\n ' ' ' < \"$1/stdout.txt\" | grep -q 'Runs on DDP + ZeroRedundancyOptimizer + no_sync() on the first k-1 micro-steps. DeepSpeed ZeRO stage 1 + overlap_comm. Megatron-LM --use-distributed-optimizer --overlap-grad-reduce' && head -1 \"$1/result.csv\" | grep -q ',frameworks,tp,pp,cp,virtual_stages,schedule,sequence_parallel,bubble_fraction,peak_stage$' && grep -q ',ddp deepspeed megatron,1,1,1,1,,false,0,$' \"$1/result.csv\" && echo FRAMEWORKS-OK"
  ${G} ${T}/frameworks ${X})
gaccum_cli_test(tune-framework-torchtitan 0 "TORCHTITAN-OK" -- sh -c
  "rm -rf \"$1\" && mkdir -p \"$1\" && \"$0\" tune --spec \"$2/specs/llama2-7b.json\" --cluster \"$2/clusters/h100-8node-ib400.json\" --global-batch 512 --framework torchtitan --out \"$1\" > \"$1/stdout.txt\" && grep -q 'framework torchtitan' \"$1/stdout.txt\" && tr -s '\\n ' ' ' < \"$1/stdout.txt\" | grep -q 'Run as: torchtitan data_parallel_shard_degree' && ! tr -s '\\n ' ' ' < \"$1/stdout.txt\" | grep -q 'Sync choice: no_sync' && ! awk -F, 'NR > 1 && $3 > 1 && $5 != \"every-step\"' \"$1/result.csv\" | grep -q . && tr -d '\\n ' < \"$1/result.json\" | grep -q '\"framework\":{\"value\":\"torchtitan\",\"source\":\"flag--framework\"}' && echo TORCHTITAN-OK"
  ${G} ${T}/torchtitan ${X})
# At accum_steps 1 overlap and every-step are the same run: ranked once (as overlap), the
# every-step row kept in result.csv with the reason.
gaccum_cli_test(tune-k1-same-run 0 "SAME-RUN-OK" -- sh -c
  "rm -rf \"$1\" && mkdir -p \"$1\" && \"$0\" tune --spec \"$2/specs/llama2-7b.json\" --cluster \"$2/clusters/h100-8node-ib400.json\" --global-batch 64 --world-sizes 64 --out \"$1\" --force > \"$1/stdout.txt\" && grep -q 'accum_steps 1: the same run as overlap' \"$1/result.csv\" && grep -Eq '^ +1 +1 +1 +64 overlap' \"$1/stdout.txt\" && ! grep -Eq '^ +[0-9]+ +[0-9]+ +1 +64 every-step' \"$1/stdout.txt\" && echo SAME-RUN-OK"
  ${G} ${T}/k1-same-run ${X})
# A runner-up priced the same (zero2 beside zero1 with no_sync accumulation) is named as an
# equivalent run, not "+0.0% throughput, mostly compute +0 us/step" (README's first journey).
gaccum_cli_test(tune-next-same-price 0 "Next: #2 b=1 k=8 p=64 overlap zero2 bf16 \\(sharding zero1->zero2\\): the same step time and peak memory \\(137.4 samples/s, 56.5 GiB\\): an equivalent run here" -- sh -c
  "rm -rf \"$1\" && \"$0\" tune --model-config \"$2/hf/llama-3.1-8b.json\" --seq-len 4096 --cluster \"$2/clusters/h100-8node-ib400.json\" --global-batch 512 --out \"$1\" | tr -s '\\n ' ' '"
  ${G} ${T}/next-same-price ${X})
gaccum_cli_test(tune-framework-bad 2 "--framework: unknown framework 'jax': expected ddp, fsdp, fsdp2, deepspeed, megatron, torchtitan or horovod" --one-line-stderr --
  ${G} tune --profile ${D}/small-profile.json --framework jax --out ${T}/jax)

# The units LLM users read: the global batch in tokens (K/M/G binary, rounded to whole samples
# with a note), tokens/s/GPU and MFU in the table, TFLOP/s/GPU and MFU in the recommendation and
# the CSV; the table's words (strategy, comm, binding) explained under it.
gaccum_cli_test(tune-global-batch-tokens 0 "TOKENS-OK" -- sh -c
  "rm -rf \"$1\" && mkdir -p \"$1\" && \"$0\" tune --spec \"$2/specs/llama2-7b.json\" --cluster \"$2/clusters/h100-8node-ib400.json\" --global-batch '4M tokens' --out \"$1\" > \"$1/stdout.txt\" && f=$(tr -s '\\n ' ' ' < \"$1/stdout.txt\") && echo \"$f\" | grep -q 'global_batch 1024, world_size' && echo \"$f\" | grep -q 'global_batch 1024 samples from --global-batch 4M tokens: 4194304 tokens / 4096 tokens per sample' && echo \"$f\" | grep -q 'samples/s tok/s/GPU MFU peak mem' && echo \"$f\" | grep -Eq 'tokens/s/GPU, [0-9]+ TFLOP/s/GPU, MFU [0-9]+%' && echo \"$f\" | grep -q 'binding = what stops the next larger micro_batch' && head -1 \"$1/result.csv\" | grep -q ',tokens_per_s_per_gpu,model_tflops_per_gpu,mfu,frameworks,tp,pp,' && echo TOKENS-OK"
  ${G} ${T}/tokens ${X})
gaccum_cli_test(tune-global-batch-tokens-rounded 0 "global_batch 244 samples from --global-batch-tokens 1000000: 1000000 tokens / 4096 tokens per sample = 244.14, rounded to 244 samples \\(999424 tokens per step\\)" -- sh -c
  "\"$0\" tune --spec \"$1/specs/llama2-7b.json\" --cluster \"$1/clusters/h100-8node-ib400.json\" --global-batch-tokens 1000000 --out \"$2\" --force | tr -s '\\n ' ' '"
  ${G} ${X} ${T}/tokens-rounded)
gaccum_cli_test(tune-global-batch-tokens-bad 2 "--global-batch-tokens: invalid token count '1.5x': expected a whole number of tokens" --one-line-stderr --
  ${G} tune --spec ${X}/specs/llama2-7b.json --global-batch-tokens 1.5x --out ${T}/tokens-bad)
gaccum_cli_test(tune-global-batch-tokens-twice 2 "--global-batch-tokens: pass it or --global-batch" --one-line-stderr --
  ${G} tune --spec ${X}/specs/llama2-7b.json --global-batch-tokens 1M --global-batch 64 --out ${T}/tokens-twice)
# On a GPU the peak's parts include the caching allocator's reserve: the plan line adds up.
gaccum_cli_test(tune-plan-parts-add-up 0 "plan zero1 .*activations [0-9.]+ GiB \\+ caching allocator reserve 1000 MiB = peak 62.4 GiB per rank" -- sh -c
  "rm -rf \"$1\" && \"$0\" tune --spec \"$2/specs/llama2-7b.json\" --cluster \"$2/clusters/h100-8node-ib400.json\" --global-batch 1024 --out \"$1\" | tr -s ' \\n' ' '"
  ${G} ${T}/parts ${X})
