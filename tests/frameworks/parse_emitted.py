#!/usr/bin/env python3
"""What: reads the files `gaccum-tune tune --emit all` wrote with the frameworks' own loaders.
  hf_training_args.json      transformers.HfArgumentParser(TrainingArguments).parse_json_file
                             (unknown keys refused; TrainingArguments.__post_init__ runs)
  accelerate_config.yaml     accelerate's load_config_from_file (ClusterConfig; unknown keys refused)
  lightning_trainer.yaml     jsonargparse over lightning.pytorch.Trainer's signature (LightningCLI's
                             parser: names and types checked, nothing instantiated)
  *deepspeed_config.json     deepspeed.runtime.config.DeepSpeedConfig with a data-parallel group of
                             WORLD ranks (its batch rule: train = micro x accumulation x world)
  torchtitan.toml            tomllib (what torchtitan's config manager reads TOML with)
  megatron_args.sh, launch.sh  bash -n, and the arguments split as the shell splits them
Usage: parse_emitted.py DIR WORLD_SIZE
Why: tune's files must load in the user's framework, not only in `gaccum-tune check`.
Exit 77 (CTest's skip) when a library is missing, naming it.
"""
import json
import os
import shlex
import subprocess
import sys

SKIP = 77


def need(module):
    try:
        return __import__(module)
    except Exception as e:  # noqa: BLE001 - any import failure means the library is not usable here
        print(f"SKIP: python module {module} not importable ({e}); scripts/test-torch2 installs it")
        sys.exit(SKIP)


def main():
    out, world = sys.argv[1], int(sys.argv[2])
    for m in ("transformers", "accelerate", "lightning", "jsonargparse", "deepspeed", "tomllib"):
        need(m)
    os.chdir(out)
    seen = 0

    path = "hf_training_args.json"
    if os.path.exists(path):
        from transformers import HfArgumentParser, TrainingArguments
        import torch
        given = json.load(open(path))
        data = dict(given)
        if not torch.cuda.is_available():
            # TrainingArguments refuses bf16/fp16 without a GPU unless told it runs on the CPU:
            # use_cpu is added for this machine; every key of the file is still the loader's.
            data["use_cpu"] = True
        (args,) = HfArgumentParser(TrainingArguments).parse_dict(data, allow_extra_keys=False)
        assert args.per_device_train_batch_size == given["per_device_train_batch_size"]
        assert args.gradient_accumulation_steps == given["gradient_accumulation_steps"]
        assert args.bf16 == given["bf16"] and args.fp16 == given["fp16"]
        print(f"hf: TrainingArguments(per_device_train_batch_size={args.per_device_train_batch_size}, "
              f"gradient_accumulation_steps={args.gradient_accumulation_steps}, bf16={args.bf16}, "
              f"fsdp={args.fsdp}, deepspeed={args.deepspeed})")
        seen += 1

    path = "accelerate_config.yaml"
    if os.path.exists(path):
        from accelerate.commands.config.config_args import load_config_from_file
        cfg = load_config_from_file(path)
        assert cfg.num_processes == world, (cfg.num_processes, world)
        print(f"accelerate: {type(cfg).__name__}(distributed_type={cfg.distributed_type}, "
              f"num_processes={cfg.num_processes}, num_machines={cfg.num_machines}, "
              f"mixed_precision={cfg.mixed_precision}, fsdp_config={cfg.fsdp_config}, "
              f"deepspeed_config={cfg.deepspeed_config})")
        seen += 1

    path = "lightning_trainer.yaml"
    if os.path.exists(path):
        from jsonargparse import ArgumentParser
        from lightning.pytorch import Trainer
        parser = ArgumentParser()
        parser.add_class_arguments(Trainer, "trainer")
        cfg = parser.parse_path(path)
        t = cfg.trainer
        assert t.devices * t.num_nodes == world, (t.devices, t.num_nodes, world)
        print(f"lightning: Trainer(devices={t.devices}, num_nodes={t.num_nodes}, strategy={t.strategy}, "
              f"precision={t.precision}, accumulate_grad_batches={t.accumulate_grad_batches})")
        seen += 1

    import deepspeed.runtime.config as ds_config
    from deepspeed.runtime.config import DeepSpeedConfig

    # No process group here: rank 0 of a data-parallel group of the file's size (the mpu below),
    # which DeepSpeed asks dist for first.
    ds_config.dist.get_rank = lambda *a, **k: 0

    class DataParallel:  # the mpu DeepSpeedConfig asks for the data-parallel size
        def __init__(self, dp):
            self.dp = dp

        def get_data_parallel_world_size(self):
            return self.dp

        def get_data_parallel_rank(self):
            return 0

        def get_model_parallel_world_size(self):
            return 1

    for path in ("deepspeed_config.json", "hf_deepspeed_config.json", "accelerate_deepspeed_config.json"):
        if os.path.exists(path):
            doc = json.load(open(path))
            dp = doc["train_batch_size"] // (doc["train_micro_batch_size_per_gpu"] * doc["gradient_accumulation_steps"])
            c = DeepSpeedConfig(path, mpu=DataParallel(dp))
            print(f"deepspeed {path}: train_batch_size={c.train_batch_size} micro={c.train_micro_batch_size_per_gpu} "
                  f"gas={c.gradient_accumulation_steps} zero_stage={c.zero_optimization_stage} "
                  f"bf16={c.bfloat16_config.enabled}")
            seen += 1

    path = "torchtitan.toml"
    if os.path.exists(path):
        import tomllib
        t = tomllib.load(open(path, "rb"))
        for key in ("data_parallel_shard_degree", "tensor_parallel_degree", "pipeline_parallel_degree"):
            assert isinstance(t["parallelism"][key], int), key
        assert isinstance(t["training"]["local_batch_size"], int)
        print(f"torchtitan: [training] {t['training']} [parallelism] {t['parallelism']}")
        seen += 1

    for path in ("megatron_args.sh", "launch.sh"):
        if os.path.exists(path):
            subprocess.run(["bash", "-n", path], check=True)
            words = shlex.split(open(path).read(), comments=True)
            print(f"{path}: bash -n ok, {len(words)} words")
            seen += 1
    if seen == 0:
        print(f"no emitted file in {out}")
        return 1
    print(f"parsed {seen} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
