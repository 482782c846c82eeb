#!/usr/bin/env bash
# `gaccum-tune profile` as 2 "nodes" x 2 ranks on loopback, started the way torchrun starts them
# (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT,
# TORCHELASTIC_RUN_ID; rank 0 hosts the store), then `cluster fit` on the profile and `tune` of a
# 16-node job with the fitted cluster. Oversubscribes the cores (4 ranks): a correctness test.
# Checks: every rank exits 0 and only rank 0 writes; the profile's topology (2 nodes x 2), its
# allreduce, reduce-scatter and all-gather at the three levels (job world_size 4, intra_node 2,
# inter_node 2), compute with 4 concurrent ranks; the fitted cluster's two levels measured, with
# the profile as their source; the tuner's many-node rows labelled "intra measured, inter
# measured"; `check --probe-links` on the same ranks (every level priced; a described
# InfiniBand cluster drifts at every level).
# Usage: two_nodes.sh GACCUM
set -u
G=$1
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
       || echo $((20000 + $$ % 20000)))
dir=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run_rank() {  # rank node local
  local r=$1 n=$2 l=$3
  env -u SLURM_PROCID -u SLURM_NTASKS -u OMPI_COMM_WORLD_RANK -u PMI_RANK \
      RANK=$r WORLD_SIZE=4 LOCAL_RANK=$l LOCAL_WORLD_SIZE=2 GROUP_RANK=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      TORCHELASTIC_RUN_ID=two-nodes-test \
      timeout 300 "$G" profile --workload mlp-small --device cpu --micro-batches 1,2,4 --sizes 4K-256K*4 \
        --iters 3 --ci-target 0 --comm-iters 5 --threads-per-rank 1 --time-budget 20 --timeout 60s \
        -o "$dir/profile.json" >"$dir/out$r" 2>"$dir/err$r"
  echo $? >"$dir/rc$r"
}
run_rank 0 0 0 & run_rank 1 0 1 & run_rank 2 1 0 & run_rank 3 1 1 &
wait
for r in 0 1 2 3; do echo "--- rank $r (exit $(cat "$dir/rc$r"))"; tail -n 25 "$dir/out$r"; cat "$dir/err$r"; done
for r in 0 1 2 3; do [ "$(cat "$dir/rc$r")" = 0 ] || fail "rank $r exited $(cat "$dir/rc$r")"; done
grep -q "wrote $dir/profile.json (rank 0 of 4, torchrun launcher)" "$dir/out0" || fail "rank 0 did not say it wrote the profile"
for r in 1 2 3; do [ ! -s "$dir/out$r" ] || fail "rank $r printed a summary (only rank 0 should)"; done
/usr/bin/python3 - "$dir/profile.json" <<'PY' || fail "profile contents"
import json, sys
p = json.load(open(sys.argv[1]))
t = p["topology"]
assert t["nodes"] == 2 and t["ranks_per_node"] == 2 and t["launcher"] == "torchrun", t
assert len(t["hosts"]) == 2 and t["hosts"][0] != t["hosts"][1], t
levels = {}
for a in p["allreduce"]:
    levels.setdefault((a.get("level", "job"), a["world_size"]), []).append(a)
    assert a["wrong"] == 0, a
for key in [("job", 4), ("intra_node", 2), ("inter_node", 2)]:
    assert key in levels and len([a for a in levels[key] if a["tag"] == "sweep"]) == 4, (key, sorted(levels))
coll = {}
for c in p["collectives"]:
    coll.setdefault((c.get("level", "job"), c["world_size"], c["op"]), []).append(c)
    assert c["wrong"] == 0, c
for level, ranks in [("job", 4), ("intra_node", 2), ("inter_node", 2)]:
    for op in ("reduce_scatter", "all_gather"):
        key = (level, ranks, op)
        assert key in coll and len([c for c in coll[key] if c["tag"] == "sweep"]) == 4, (key, sorted(coll))
assert {c["concurrent_ranks"] for c in p["compute"]} == {4}, p["compute"]
assert [c["micro_batch"] for c in p["compute"]] == [1, 2, 4]
assert len(p["memory"]) == 3 and p["memory"][0]["weights"] >= p["workload"]["param_bytes"]
print("conditions:", [(c["phase"], round(c["others_cores"], 2), round(c["steal"], 3)) for c in p["conditions"]])
print("profile ok:", t, sorted(levels))
PY
"$G" cluster fit --profile "$dir/profile.json" --nodes 16 --device-memory 1GiB --name loopback-2x2 \
    -o "$dir/cluster.json" >"$dir/fit.out" 2>&1 || { cat "$dir/fit.out"; fail "cluster fit failed"; }
cat "$dir/fit.out"
/usr/bin/python3 - "$dir/cluster.json" "$dir/profile.json" <<'PY' || fail "cluster contents"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["nodes"] == 16 and c["gpus_per_node"] == 2, c
for level in ("intra_node", "inter_node"):
    m = c[level]["measured"]
    assert sys.argv[2] in m["from"] and m["points"] >= 12, (level, m)  # allreduce, reduce-scatter, all-gather
    assert "reduce-scatter" in m["from"] and "all-gather" in m["from"], m["from"]
    assert c[level]["bandwidth_GBps"] > 0 and c[level]["latency_us"] >= 0, c[level]
assert c["created_utc"].endswith("Z")
print("cluster ok:", c["intra_node"], c["inter_node"])
PY
"$G" tune --profile "$dir/profile.json" --cluster "$dir/cluster.json" --global-batch 1024 --world-sizes 32 \
    --out "$dir/tune" >"$dir/tune.out" 2>&1 || { cat "$dir/tune.out"; fail "tune failed"; }
grep -A3 "communication links" "$dir/tune.out" | head -n 4
grep -q "communication links: intra-node measured, inter-node measured" "$dir/tune.out" || fail "tune's explanation does not label the links"
/usr/bin/python3 - "$dir/tune/result.csv" <<'PY' || fail "tune rows"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["world_size"] == "32"]
assert rows, "no world_size 32 rows"
assert all(r["comm_links"] == "intra measured, inter measured" for r in rows), {r["comm_links"] for r in rows}
print(len(rows), "rows at world_size 32 (16 nodes), all labelled", rows[0]["comm_links"])
PY
# The drift probe: `check --distributed --probe-links` on the same 4 ranks, against the cluster
# just fitted (the same loopback: its levels must be priced, with finite ratios) and against a
# described InfiniBand cluster (microseconds where loopback Gloo takes far longer: every level drifts).
check_rank() {  # rank node local cluster tolerance tag
  local r=$1 n=$2 l=$3
  env -u SLURM_PROCID -u SLURM_NTASKS -u OMPI_COMM_WORLD_RANK -u PMI_RANK \
      RANK=$r WORLD_SIZE=4 LOCAL_RANK=$l LOCAL_WORLD_SIZE=2 GROUP_RANK=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      TORCHELASTIC_RUN_ID=two-nodes-check \
      timeout 120 "$G" check --profile "$dir/profile.json" --cluster "$4" -b 2 -k 2 -p 4 --distributed --probe-links \
        --probe-tolerance "$5" --probe-sizes 64K,1M --probe-iters 5 --probe-device cpu --timeout 60s --json \
        >"$dir/check-$6-$r.json" 2>"$dir/check-$6-$r.err"
  echo $? >"$dir/check-$6-rc$r"
}
ib="$(dirname "$0")/../../examples/clusters/ib-cluster-16node.json"
for c in fitted ib; do
  cl="$dir/cluster.json"; [ $c = ib ] && cl=$ib
  check_rank 0 0 0 "$cl" 100% $c & check_rank 1 0 1 "$cl" 100% $c & check_rank 2 1 0 "$cl" 100% $c &
  check_rank 3 1 1 "$cl" 100% $c &
  wait
  for r in 0 1 2 3; do
    rc=$(cat "$dir/check-$c-rc$r")
    [ "$rc" = 0 ] || [ "$rc" = 1 ] || { cat "$dir/check-$c-$r.err"; fail "check --probe-links ($c) rank $r exited $rc"; }
  done
done
/usr/bin/python3 - "$dir" <<'PY' || fail "link probe"
import json, sys
d = sys.argv[1]
for c in ("fitted", "ib"):
    views = [json.load(open(f"{d}/check-{c}-{r}.json")) for r in range(4)]
    lp = views[0]["link_probe"]
    assert all(v["link_probe"] == lp for v in views), f"{c}: the ranks saw different probes"
    assert lp["nodes"] == 2 and lp["ranks_per_node"] == 2 and lp["tolerance"] == 1.0, lp
    got = sorted({(p["level"], p["ranks"]) for p in lp["points"]})
    assert got == [("inter_node", 2), ("intra_node", 2), ("job", 4)], got
    assert all(p["measured_s"] > 0 and p["predicted_s"] > 0 and p["ratio"] > 0 for p in lp["points"]), lp
    for p in lp["points"]:
        print(c, p["level"], p["ranks"], p["bytes"], "measured %.3g s, cluster %.3g s, ratio %.2f" %
              (p["measured_s"], p["predicted_s"], p["ratio"]))
    if c == "ib":
        assert lp["drifted"] == ["job", "intra_node", "inter_node"], lp["drifted"]
        assert views[0]["verdict"] in ("warn", "fail"), views[0]["verdict"]
        assert any(w.startswith("cluster drift: the inter_node allreduce over 2 ranks") for w in views[0]["warnings"]), \
            views[0]["warnings"]
    else:
        ratios = [p["ratio"] for p in lp["points"]]
        print("fitted cluster: ratios", ["%.2f" % x for x in ratios], "drifted", lp["drifted"])
print("link probe ok")
PY
echo TWO-NODES-OK
