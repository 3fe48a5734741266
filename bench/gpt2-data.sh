# gpt2-data.sh: sourced by dp.sh and dp_tcp.sh. gpt2_data CFG DIR STEPS
# writes GPT-2 at config CFG = LAYERSxEMBDxBxT (heads of 64) to DIR/m.raf
# and STEPS batches of random tokens (seed 0) to DIR/x.npy and DIR/y.npy,
# and sets layers, embd, batch and seq.
gpt2_data() {
  IFS=x read -r layers embd batch seq <<< "$1"
  /usr/bin/python3 examples/gpt2/gen_gpt2.py --layers "$layers" --heads "$((embd / 64))" \
    --embd "$embd" --vocab 50257 --seq "$seq" --batch "$batch" --ctx "$seq" "$2/m.raf"
  /usr/bin/python3 - "$2" "$batch" "$seq" "$3" <<'PY'
import numpy as np, sys
tmp, b, t, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
tok = np.random.default_rng(0).integers(0, 50257, (b * steps, t + 1)).astype(np.int64)
np.save(f"{tmp}/x.npy", tok[:, :t]); np.save(f"{tmp}/y.npy", tok[:, 1:])
PY
}
