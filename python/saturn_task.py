"""Your own PyTorch (or any Python) training loop as a Saturn task.

Saturn runs a `type: command` task (docs/byo.md) with its settings in SATURN_*
environment variables, reads one progress line per step from its output,
sends SIGTERM to move it to other GPUs or another technique, and restarts it
later from the step it reached. This module speaks that contract for you:

    import saturn_task
    run = saturn_task.Run()                  # reads SATURN_*; errors if not under Saturn
    state = run.load(default=None)           # the last checkpoint, or default
    for step in run.steps():                 # start step .. target; stops cleanly on SIGTERM
        loss = train_one_step(...)
        run.report(loss=loss)                # 'saturn: step=N loss=X step_s=Y' (rank 0 prints)
    run.save(state)                          # atomic; at the target or at the pre-emption step

Standard library only; torch is used when your program imports it (torch.save
and torch.load for checkpoints, peak CUDA memory, agreeing on a stop step
across the ranks of a torch.distributed job, and two helpers for DDP:
`model = run.distributed(model)` and `x = run.shard(x)`). Under torchrun or
`python3 -m saturn_task launch` the ranks come from RANK, LOCAL_RANK and
WORLD_SIZE: rank 0 prints and saves, every rank loads.

`python3 -m saturn_task launch --nproc_per_node=N script.py ARGS` starts N
ranks of a script with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) without importing torch itself,
forwards SIGTERM to them and exits 0 when they all do.
"""

import os
import pickle
import signal
import socket
import subprocess
import sys
import time

__all__ = ["Run", "NotUnderSaturn", "CheckpointError", "launch"]
__version__ = "0.1.0"

CHECKPOINT_FILE = "saturn_task.ckpt"
_FORMAT = "saturn_task/1"


class NotUnderSaturn(RuntimeError):
    """The environment is not one Saturn gives a command task."""


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be read, or one missing where Saturn expects it."""


def _torch():
    """torch (imported now if it was not yet), or None when it is not installed."""
    mod = sys.modules.get("torch")
    if mod is not None:
        return mod
    try:
        import torch  # noqa: F401  (optional)

        return torch
    except ImportError:
        return None


def _int_var(env, name, default=None, minimum=0):
    raw = env.get(name)
    if raw is None or raw == "":
        if default is None:
            raise NotUnderSaturn(
                f"{name} is not set: this program expects to run as a Saturn task "
                "(`type: command` in a workload, started by `saturn run`), which sets "
                "SATURN_STEPS, SATURN_START_STEP, SATURN_CHECKPOINT_DIR and the other "
                "SATURN_* variables (docs/byo.md); to run it by hand, set them yourself, "
                "e.g. SATURN_STEPS=100 SATURN_CHECKPOINT_DIR=./ckpt")
        return default
    try:
        value = int(raw)
    except ValueError:
        raise NotUnderSaturn(f"{name}={raw!r}: expected a whole number") from None
    if value < minimum:
        raise NotUnderSaturn(f"{name}={value}: expected at least {minimum}")
    return value


class Run:
    """One run of a Saturn command task: its settings, steps, reports and checkpoints.

    Attributes read from the environment (`env`, default os.environ):
      steps            SATURN_STEPS: the step to stop at (required)
      start_step       SATURN_START_STEP: the step Saturn resumes from (default 0)
      checkpoint_dir   SATURN_CHECKPOINT_DIR (required)
      gpus, gpu_ids    SATURN_GPUS (default 1), SATURN_GPU_IDS (list of ints)
      technique, node  SATURN_TECHNIQUE, SATURN_NODE ("" when unset)
      seed             SATURN_SEED (default 0)
      rank, local_rank, world_size   RANK, LOCAL_RANK, WORLD_SIZE (0, 0, 1)
    After load(), `step` is where training continues; `preempted` turns True
    when SIGTERM stopped the loop of steps().
    """

    def __init__(self, env=None, out=None, handle_sigterm=True):
        env = os.environ if env is None else env
        self.steps_total = _int_var(env, "SATURN_STEPS")
        self.start_step = _int_var(env, "SATURN_START_STEP", 0)
        self.checkpoint_dir = env.get("SATURN_CHECKPOINT_DIR", "")
        if not self.checkpoint_dir:
            raise NotUnderSaturn(
                "SATURN_CHECKPOINT_DIR is not set: Saturn gives every command task a "
                "checkpoint folder (docs/byo.md); set it to run this program by hand")
        if self.start_step > self.steps_total:
            raise NotUnderSaturn(
                f"SATURN_START_STEP={self.start_step} is past SATURN_STEPS={self.steps_total}")
        self.gpus = _int_var(env, "SATURN_GPUS", 1, minimum=1)
        ids = env.get("SATURN_GPU_IDS", "")
        try:
            self.gpu_ids = [int(i) for i in ids.split(",") if i.strip()]
        except ValueError:
            raise NotUnderSaturn(
                f"SATURN_GPU_IDS={ids!r}: expected a comma list of device numbers") from None
        self.technique = env.get("SATURN_TECHNIQUE", "")
        self.node = env.get("SATURN_NODE", "")
        self.seed = _int_var(env, "SATURN_SEED", 0, minimum=-(2**63))
        self.rank = _int_var(env, "RANK", 0)
        self.local_rank = _int_var(env, "LOCAL_RANK", 0)
        self.world_size = _int_var(env, "WORLD_SIZE", 1, minimum=1)
        if self.rank >= self.world_size:
            raise NotUnderSaturn(f"RANK={self.rank} is not below WORLD_SIZE={self.world_size}")
        self.step = self.start_step
        self.preempted = False
        self._out = out if out is not None else sys.stdout
        self._stop_requested = False
        self._callbacks = []
        self._step_began = None
        self._saved_step = None
        if handle_sigterm:
            self._install_sigterm()

    # -- who am I ---------------------------------------------------------

    @property
    def is_main(self):
        """True on the rank that prints and saves (rank 0)."""
        return self.rank == 0

    @property
    def checkpoint_path(self):
        return os.path.join(self.checkpoint_dir, CHECKPOINT_FILE)

    # -- torch helpers (torch imported by the program) ----------------------

    @property
    def device(self):
        """torch.device: cuda:LOCAL_RANK when CUDA is available, else cpu."""
        import torch

        if torch.cuda.is_available():
            return torch.device("cuda", self.local_rank % torch.cuda.device_count())
        return torch.device("cpu")

    def distributed(self, model):
        """`model` on this rank's device; with WORLD_SIZE > 1, also joins the
        process group (NCCL on GPUs, gloo on CPUs) and wraps the model in
        DistributedDataParallel. Load checkpoints into `model` before."""
        import torch

        model = model.to(self.device)
        if self.world_size == 1:
            return model
        import torch.distributed as dist

        if not dist.is_initialized():
            backend = "nccl" if self.device.type == "cuda" else "gloo"
            if backend == "nccl":
                torch.cuda.set_device(self.device)
            dist.init_process_group(backend)
        ids = [self.device.index] if self.device.type == "cuda" else None
        return torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)

    def shard(self, *batches):
        """This rank's rows of global batches (rank r of W takes rows
        [r*N/W, (r+1)*N/W)), on this rank's device: with the global batch drawn
        the same on every rank, DDP then trains as one process would on all of
        it, whatever the number of ranks. One tensor in, one out; several in, a
        tuple out: `x, y = run.shard(x, y)`."""
        device = self.device
        out = []
        for batch in batches:
            n = batch.shape[0]
            if n % self.world_size:
                raise ValueError(f"shard: a batch of {n} rows does not split over "
                                 f"{self.world_size} ranks")
            part = n // self.world_size
            out.append(batch[self.rank * part:(self.rank + 1) * part].to(device))
        return out[0] if len(out) == 1 else tuple(out)

    # -- pre-emption ------------------------------------------------------

    def _install_sigterm(self):
        try:
            signal.signal(signal.SIGTERM, self._on_sigterm)
        except ValueError:
            # Not the main thread: the caller calls request_stop() itself.
            pass

    def _on_sigterm(self, signum, frame):
        self._stop_requested = True

    def request_stop(self):
        """What SIGTERM does: the loop of steps() ends after the step in flight."""
        self._stop_requested = True

    def on_preempt(self, fn):
        """Registers fn() to run once when SIGTERM stops the loop of steps(). If it
        returns something other than None, that is saved as the checkpoint."""
        self._callbacks.append(fn)
        return fn

    def _stop_agreed(self):
        """Whether to stop before the next step; every rank of a torch.distributed
        job stops at the same step (one tiny all-reduce per step when world > 1)."""
        stop = self._stop_requested
        if self.world_size > 1:
            torch = sys.modules.get("torch")
            if torch is not None and torch.distributed.is_available() \
                    and torch.distributed.is_initialized():
                dev = "cpu"
                if torch.distributed.get_backend() == "nccl":
                    dev = torch.device("cuda", torch.cuda.current_device())
                flag = torch.tensor([1.0 if stop else 0.0], device=dev)
                torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
                stop = bool(flag.item() > 0)
        return stop

    # -- the loop -----------------------------------------------------------

    def steps(self):
        """Yields step numbers from `step` (after load(): the checkpoint's step)
        to SATURN_STEPS - 1. Stops early, after the step in flight, on SIGTERM:
        then `preempted` is True and the on_preempt callbacks have run."""
        while self.step < self.steps_total:
            began = time.perf_counter()  # the stop check is part of the step's cost
            if self._stop_agreed():
                self._preempt()
                return
            self._step_began = began
            yield self.step
            self.step += 1
            self._step_began = None

    def _preempt(self):
        self.preempted = True
        for fn in self._callbacks:
            state = fn()
            if state is not None:
                self.save(state)
        self._callbacks = []

    def report(self, loss, step_s=None, peak_mem_gib=None, **extra):
        """Prints 'saturn: step=N loss=X step_s=Y [peak_mem_gib=Z]' for the step in
        flight (rank 0 only). `loss` may be a float or a torch scalar; under
        torch.distributed with world > 1, call it on every rank: the printed loss
        is the mean over ranks. step_s defaults to the time since steps() yielded
        this step; peak_mem_gib to torch's peak CUDA memory when CUDA is in use.
        Extra key=value pairs are appended (Saturn ignores unknown keys)."""
        value = self._mean_loss(loss)
        if step_s is None:
            began = self._step_began
            step_s = time.perf_counter() - began if began is not None else 0.0
        if peak_mem_gib is None:
            peak_mem_gib = self._peak_mem_gib()
        if not self.is_main:
            return
        line = f"saturn: step={self.step} loss={value:.9g} step_s={step_s:.6f}"
        if peak_mem_gib is not None:
            line += f" peak_mem_gib={peak_mem_gib:.6g}"
        for key, v in extra.items():
            line += f" {key}={v}"
        print(line, file=self._out, flush=True)

    def _mean_loss(self, loss):
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(loss, torch.Tensor):
            t = loss.detach().float().reshape(1)
            if self.world_size > 1 and torch.distributed.is_available() \
                    and torch.distributed.is_initialized():
                if torch.distributed.get_backend() != "nccl":
                    t = t.cpu()
                t = t.clone()
                torch.distributed.all_reduce(t)
                t /= self.world_size
            return float(t.item())
        try:
            return float(loss)
        except (TypeError, ValueError):
            raise TypeError(f"report(loss=...): expected a number or a torch scalar, "
                            f"not {type(loss).__name__}") from None

    @staticmethod
    def _peak_mem_gib():
        torch = sys.modules.get("torch")
        if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
            return None
        return torch.cuda.max_memory_allocated() / float(1 << 30)

    # -- checkpoints --------------------------------------------------------

    def save(self, state):
        """Writes `state` with the current step as the checkpoint, atomically
        (a temporary file, fsync, rename). Rank 0 only; torch.save when torch is
        imported by the program, pickle otherwise. A second save at the same step (after the
        on_preempt callback saved) is skipped."""
        if not self.is_main or self._saved_step == self.step:
            return
        os.makedirs(self.checkpoint_dir, exist_ok=True)
        record = {"format": _FORMAT, "step": self.step, "state": state}
        tmp = f"{self.checkpoint_path}.tmp{os.getpid()}"
        torch = sys.modules.get("torch")  # a program that uses torch saves with it
        try:
            with open(tmp, "wb") as f:
                if torch is not None:
                    torch.save(record, f)
                else:
                    pickle.dump(record, f, protocol=pickle.HIGHEST_PROTOCOL)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.checkpoint_path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _fsync_dir(self.checkpoint_dir)
        self._saved_step = self.step

    def load(self, default=None, map_location="cpu"):
        """The state of the last checkpoint, or `default` when there is none and
        Saturn starts the task from step 0. Sets `step` to the checkpoint's step:
        Saturn's start step, or a newer one this program saved itself (after a
        crash Saturn only knows the step of the last pre-emption). Raises
        CheckpointError when Saturn resumes from a step > 0 and no checkpoint
        exists, or when the file cannot be read."""
        path = self.checkpoint_path
        if not os.path.exists(path):
            if self.start_step > 0:
                raise CheckpointError(
                    f"{path}: missing, but Saturn resumes this task from step "
                    f"{self.start_step} (SATURN_START_STEP); save with run.save(state)")
            self.step = 0
            return default
        try:
            with open(path, "rb") as f:
                head = f.read(2)
                f.seek(0)
                if head[:1] == b"\x80":  # a pickle stream
                    record = pickle.load(f)
                else:  # torch.save's zip format
                    torch = _torch()
                    if torch is None:
                        raise CheckpointError(f"{path}: written by torch.save, and torch "
                                              "is not importable here")
                    record = torch.load(f, map_location=map_location)
        except CheckpointError:
            raise
        except Exception as e:  # noqa: BLE001  (any unreadable file)
            raise CheckpointError(f"{path}: cannot be read ({type(e).__name__}: {e})") from e
        if not isinstance(record, dict) or record.get("format") != _FORMAT:
            raise CheckpointError(f"{path}: not a checkpoint written by saturn_task")
        saved = int(record["step"])
        if saved < self.start_step:
            print(f"saturn_task: {path} is at step {saved}, before Saturn's start step "
                  f"{self.start_step}; resuming from step {saved}", file=sys.stderr, flush=True)
        elif saved > self.start_step:
            print(f"saturn_task: resuming from step {saved} (a newer checkpoint than "
                  f"Saturn's start step {self.start_step})", file=sys.stderr, flush=True)
        self.step = min(saved, self.steps_total)
        self._saved_step = saved
        return record["state"]


def _fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- a light torchrun: python3 -m saturn_task launch ---------------------------


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(nproc, argv, env=None, python=None):
    """Runs `python argv...` as `nproc` ranks on this node with torchrun's
    environment; returns the exit status: 0 when every rank exits 0, else the
    first failure's (a rank killed by a signal counts as 128 + signal). When one
    rank fails the others get SIGTERM. SIGTERM to the launcher goes to every rank."""
    if nproc < 1:
        raise ValueError("nproc must be at least 1")
    base = dict(os.environ if env is None else env)
    base.setdefault("MASTER_ADDR", "127.0.0.1")
    base["MASTER_PORT"] = str(_free_port())
    base.setdefault("OMP_NUM_THREADS", "1")
    procs = []
    for rank in range(nproc):
        e = dict(base, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
                 LOCAL_WORLD_SIZE=str(nproc), GROUP_RANK="0", ROLE_RANK=str(rank),
                 ROLE_WORLD_SIZE=str(nproc))
        procs.append(subprocess.Popen([python or sys.executable] + list(argv), env=e))

    def forward(signum, frame):
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    old = signal.signal(signal.SIGTERM, forward)
    status = 0
    try:
        alive = list(procs)
        while alive:
            for p in list(alive):
                rc = p.poll()
                if rc is None:
                    continue
                alive.remove(p)
                if rc != 0 and status == 0:
                    status = rc if rc > 0 else 128 - rc
                    for q in alive:
                        q.terminate()
            if alive:
                time.sleep(0.05)
    finally:
        signal.signal(signal.SIGTERM, old)
    return status


_USAGE = """usage: python3 -m saturn_task launch --nproc_per_node=N script.py [ARGS...]
       python3 -m saturn_task check

launch  runs N ranks of script.py with torchrun's environment (RANK, LOCAL_RANK,
        WORLD_SIZE, MASTER_ADDR, MASTER_PORT) without importing torch itself;
        SIGTERM goes to every rank; exits 0 when every rank does.
check   prints the Saturn settings this environment gives a program (exit 2 if
        it is not a Saturn task's)."""


def _main(args):
    if not args or args[0] in ("-h", "--help"):
        print(_USAGE)
        return 0 if args else 2
    if args[0] == "check":
        try:
            run = Run(handle_sigterm=False)
        except NotUnderSaturn as e:
            print(f"saturn_task: {e}", file=sys.stderr)
            return 2
        print(f"steps {run.start_step}..{run.steps_total} technique={run.technique!r} "
              f"gpus={run.gpus} node={run.node!r} checkpoint_dir={run.checkpoint_dir!r} "
              f"rank={run.rank}/{run.world_size}")
        return 0
    if args[0] != "launch":
        print(f"saturn_task: unknown command {args[0]!r}\n{_USAGE}", file=sys.stderr)
        return 2
    rest = list(args[1:])
    nproc = None
    while rest and rest[0].startswith("--"):
        opt = rest.pop(0)
        if opt.startswith("--nproc_per_node=") or opt.startswith("--nproc-per-node="):
            value = opt.split("=", 1)[1]
        elif opt in ("--nproc_per_node", "--nproc-per-node") and rest:
            value = rest.pop(0)
        else:
            print(f"saturn_task launch: unknown option {opt!r}\n{_USAGE}", file=sys.stderr)
            return 2
        try:
            nproc = int(value)
        except ValueError:
            nproc = 0
        if nproc < 1:
            print(f"saturn_task launch: --nproc_per_node={value}: expected a whole number "
                  "of at least 1", file=sys.stderr)
            return 2
    if nproc is None or not rest:
        print(f"saturn_task launch: needs --nproc_per_node=N and a script\n{_USAGE}",
              file=sys.stderr)
        return 2
    return launch(nproc, rest)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
