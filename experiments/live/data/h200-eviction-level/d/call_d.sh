#!/usr/bin/env bash
# Device call D (session 2026-11-29 22:20): can load inside the VM make the high level? The probe
# alone, beside 8 processes copying 1 GB arrays (memory bandwidth), alone, beside 4 processes
# allocating, filling and freeing 256 MB in a loop (page faults), alone.
set -u
O=${OUT:-/tmp/out}; mkdir -p $O
{ date -u; uptime; nvidia-smi --query-gpu=name,uuid --format=csv,noheader; nproc; } > $O/machine_d.txt 2>&1
P=.dev/probes/eviction_level
hogs() { for i in $(seq $2); do python3 -c "$1" & done; sleep 3; }
stop() { pkill -f "import numpy as np" ; sleep 2; }
$P 25 64 > $O/d0-alone.txt 2>&1
hogs "import numpy as np
a = np.ones(2**27); b = np.empty_like(a)
while True: np.copyto(b, a)" 8
$P 25 64 > $O/d1-copy8.txt 2>&1
stop
$P 20 64 > $O/d2-alone.txt 2>&1
hogs "import numpy as np
while True:
    a = np.ones(2**25); del a" 4
$P 25 64 > $O/d3-faults4.txt 2>&1
stop
$P 20 64 > $O/d4-alone.txt 2>&1
python3 -c "import numpy as np, time; a=np.ones(2**27); b=np.empty_like(a); t=time.time(); [np.copyto(b,a) for _ in range(20)]; print('one copier alone: %.1f GB/s' % (20*2*a.nbytes/1e9/(time.time()-t)))" >> $O/machine_d.txt 2>&1
