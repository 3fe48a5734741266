"""distmodels.py: what the data-parallel tests share (train_equal.py,
multihost.py, faults.py): the check that raf-run has the mpi dialect, the
two models they train with their data (the MLP example, batches of 100,
and a small GPT-2, 4 sequences of 16), and the loss log reader."""
import json, os, subprocess, sys
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "pylib"))
from safetensors_np import read as read_safetensors  # noqa: E402


def lacks_mpi(rr):
    """True, saying SKIP, when raf-run was built without the mpi dialect
    (the tests then exit 77, CTest's SKIP_RETURN_CODE)."""
    probe = subprocess.run([rr, "--version"], capture_output=True, text=True)
    if " mpi" in probe.stdout.partition("dialects:")[2]:
        return False
    print("SKIP: raf-run was built without MPI")
    return True


def make_models(tmp, steps, run):
    """Writes `steps` batches of each model's data (seed 0) and the GPT-2
    module into tmp, running commands with run(cmd); returns {name: (module,
    training step, raf-run's --dataset flags)}."""
    rng = np.random.default_rng(0)
    np.save(f"{tmp}/x.npy", rng.standard_normal((100 * steps, 784)).astype(np.float32))
    np.save(f"{tmp}/labels.npy", rng.integers(0, 10, 100 * steps).astype(np.int64))
    toks = rng.integers(0, 64, (4 * steps, 17)).astype(np.int64)
    np.save(f"{tmp}/tx.npy", toks[:, :16])
    np.save(f"{tmp}/ty.npy", toks[:, 1:])
    run(["/usr/bin/python3", f"{ROOT}/examples/gpt2/gen_gpt2.py", "--layers", "2",
         "--heads", "2", "--embd", "32", "--vocab", "64", "--seq", "16",
         "--batch", "4", f"{tmp}/gpt2.raf"])
    return {
        "mlp": (f"{ROOT}/examples/mlp/mlp.raf", "mlp_train_step",
                [f"--dataset=x=@{tmp}/x.npy", f"--dataset=labels=@{tmp}/labels.npy"]),
        "gpt2": (f"{tmp}/gpt2.raf", "gpt2_train_step",
                 [f"--dataset=x=@{tmp}/tx.npy", f"--dataset=y=@{tmp}/ty.npy"]),
    }


def reference(opt, rr, run, tmp, name, model, pipeline, steps):
    """One process's training of model = (module, step, data flags) through
    pipeline: its losses and checkpoint, against which the sharded runs are
    compared."""
    src, fn, data = model
    ref = f"{tmp}/{name}.ref"
    run([opt, "-p", pipeline, src, "-o", ref + ".raf"])
    run([rr, ref + ".raf", f"--function={fn}", f"--steps={steps}", *data,
         f"--log={ref}.jsonl", f"--save={ref}.safetensors", "--print=none"])
    return losses(ref + ".jsonl"), read_safetensors(ref + ".safetensors")


def losses(log):
    """The losses of raf-run's --log, one per step."""
    return np.array([json.loads(line)["loss"] for line in open(log)], np.float64)
