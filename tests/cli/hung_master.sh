#!/usr/bin/env bash
# A rank whose MASTER_PORT accepts connections but never answers: the rank ends with exit 88
# within --timeout + a few seconds, naming MASTER_ADDR and MASTER_PORT.
# Usage: hung_master.sh GACCUM_TUNE PYTHON3
set -u
G=$1 PY=$2
port=$(( 20000 + $$ % 20000 ))
"$PY" -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $port)); s.listen(8); s.settimeout(0.5)
held, t = [], time.time()
while time.time() - t < 30:
    try: held.append(s.accept())
    except OSError: pass
" &
listener=$!
trap 'kill $listener 2>/dev/null' EXIT
sleep 1
env RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
  "$G" validate --workload mlp-small -b 1 -k 1 --steps 1 --warmup 1 --timeout 3s -o /dev/null
