#!/usr/bin/env python3
"""Sandbox startup benchmark: `toolgate sandbox run -- sh -c true` against plain `sh -c true`,
`unshare` and bubblewrap with an equivalent read-only-root configuration, plus per-layer
variants of toolgate (layers disabled one at a time). Runs are interleaved (one run of each
configuration per round) so drift hits all of them alike.

Usage: bench/sandbox.py [--toolgate PATH] [--rounds N] [--phases N]
PATH defaults to target/release/toolgate (build with `cargo build --release -p toolgate -p
toolgate-sandbox`, so that target/release/toolgate-sandbox-helper exists next to it; its
`run` subcommand is `toolgate sandbox run` in the small binary, and the layer variants use it).
Prints median / p10 / p90 in ms, the delta of each median over plain sh, and each row's
paired difference to bubblewrap (median over rounds of its run minus bubblewrap's run in the
same round — robust to the VM's drift — with a bootstrap 95% interval), then a
per-phase breakdown of one configuration taken from the sandbox's own timing marks
(TOOLGATE_SANDBOX_TIMING=1: every process of the run writes CLOCK_MONOTONIC marks to stderr).
"""
import argparse, os, random, shutil, statistics, subprocess, sys, tempfile, time

DEVNULL = os.open(os.devnull, os.O_WRONLY)

def spawn_wait(argv, env=None):
    t = time.perf_counter_ns()
    # stderr to /dev/null: degraded variants print a warning per run.
    pid = os.posix_spawnp(argv[0], argv, env or os.environ,
                          file_actions=[(os.POSIX_SPAWN_DUP2, DEVNULL, 2)])
    _, status = os.waitpid(pid, 0)
    dt = (time.perf_counter_ns() - t) / 1e6
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed ({status}): {' '.join(argv)}")
    return dt

def phases(argv, runs):
    """Median duration of each step between consecutive timing marks (ms)."""
    env = dict(os.environ, TOOLGATE_SANDBOX_TIMING="1")
    steps = {}
    for _ in range(runs):
        t0 = time.monotonic_ns()
        p = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        t1 = time.monotonic_ns()
        marks = [("spawn", t0)]
        for line in p.stderr.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == "toolgate-sandbox-timing":
                marks.append((parts[1], int(parts[2])))
        marks.sort(key=lambda m: m[1])
        marks.append(("exited", t1))
        for (a, ta), (b, tb) in zip(marks, marks[1:]):
            steps.setdefault(f"{a} -> {b}", []).append((tb - ta) / 1e6)
    return steps

def paired_delta(xs, ys, resamples=1000):
    """Median of per-round differences xs[i] - ys[i], with a bootstrap 95% interval."""
    diffs = [x - y for x, y in zip(xs, ys)]
    rng = random.Random(1)
    meds = sorted(statistics.median(rng.choices(diffs, k=len(diffs))) for _ in range(resamples))
    return statistics.median(diffs), meds[int(0.025 * resamples)], meds[int(0.975 * resamples) - 1]

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--toolgate", default="target/release/toolgate")
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--phases", type=int, default=100, help="runs for the per-phase breakdown")
    a = ap.parse_args()
    ws = tempfile.mkdtemp(prefix="tg-bench-", dir=os.getcwd())
    home = os.environ.get("HOME", "/root")
    tg = [os.path.abspath(a.toolgate), "sandbox", "run", "--workspace", ws]
    cmd = ["sh", "-c", "true"]
    helper = os.path.join(os.path.dirname(os.path.abspath(a.toolgate)), "toolgate-sandbox-helper")
    if not os.path.exists(helper):
        raise SystemExit(f"{helper} missing: build it with `cargo build --release -p toolgate-sandbox`")
    # The small stand-alone binary: the same room without the large CLI's start-up; the
    # per-layer variants use it so that their differences are not lost in that noise.
    small = [helper, "run", "--workspace", ws]
    configs = {
        "plain sh -c true": cmd,
        "unshare -Umipuf --map-root-user (+net)": ["unshare", "--user", "--map-root-user", "--mount", "--ipc", "--pid", "--uts", "--net", "--fork"] + cmd,
        "toolgate sandbox run, all layers, network none": tg + ["--"] + cmd,
        "toolgate-sandbox-helper run, all layers, network none": small + ["--"] + cmd,
        "  … probe cache off (probe per run)": (small + ["--"] + cmd, dict(os.environ, TOOLGATE_SANDBOX_PROBE_CACHE="0")),
        "  … network full": small + ["--network", "full", "--"] + cmd,
        "  … without seccomp": small + ["--disable-layer", "seccomp", "--"] + cmd,
        "  … without landlock": small + ["--disable-layer", "landlock", "--"] + cmd,
        "  … without cgroups": small + ["--disable-layer", "cgroup_pids", "--disable-layer", "cgroup_memory", "--"] + cmd,
        "  … tier B (no user ns)": small + ["--disable-layer", "user_ns", "--"] + cmd,
    }
    if shutil.which("bwrap"):
        bw = ["bwrap", "--new-session", "--die-with-parent", "--unshare-all", "--cap-drop", "ALL",
              "--ro-bind", "/", "/", "--bind", ws, ws, "--dev", "/dev", "--proc", "/proc",
              "--tmpfs", "/tmp", "--clearenv", "--setenv", "PATH", os.environ.get("PATH", "/usr/bin:/bin")]
        if os.path.isdir(os.path.join(home, ".ssh")):
            bw += ["--tmpfs", os.path.join(home, ".ssh")]
        os.makedirs(os.path.join(ws, ".git/hooks"), exist_ok=True)
        bw += ["--ro-bind", os.path.join(ws, ".git/hooks"), os.path.join(ws, ".git/hooks")]
        configs["bwrap typical (ro /, rw ws, ro .git/hooks, tmpfs ~/.ssh, --cap-drop ALL)"] = bw + cmd
    else:
        print("bwrap not found (apt-get install bubblewrap): skipping it", file=sys.stderr)
    env_note = os.environ.copy()
    env_note.pop("TOOLGATE_SANDBOX_DISABLE", None)
    samples = {k: [] for k in configs}
    order = list(configs.items())
    for i in range(a.warmup + a.rounds):
        # A fresh order each round: a run right after another one that tore down a network
        # namespace pays for that teardown, which would otherwise always hit the same row.
        random.shuffle(order)
        for name, argv in order:
            dt = spawn_wait(*argv) if isinstance(argv, tuple) else spawn_wait(argv)
            if i >= a.warmup:
                samples[name].append(dt)
    base = statistics.median(samples["plain sh -c true"])
    bw_name = next((k for k in samples if k.startswith("bwrap")), None)
    print(f"{'configuration':<78} {'median':>8} {'p10':>7} {'p90':>7} {'Δ plain':>8}"
          + (f" {'Δ bwrap, paired [95% CI]':>26}" if bw_name else ""))
    for name, s in samples.items():
        srt = sorted(s)
        med = statistics.median(srt)
        p10, p90 = srt[len(srt) // 10], srt[(len(srt) * 9) // 10]
        line = f"{name:<78} {med:8.2f} {p10:7.2f} {p90:7.2f} {med - base:+8.2f}"
        if bw_name and name != bw_name:
            d, lo, hi = paired_delta(s, samples[bw_name])
            line += f" {d:+8.2f} [{lo:+.2f}, {hi:+.2f}]"
        print(line)
    if bw_name:
        print("(Δ bwrap, paired: median over rounds of this row's run minus bubblewrap's run of the "
              "same round, so drift of the VM cancels; bootstrap 95% CI)")
    print(f"\nper-phase medians of `toolgate sandbox run -- sh -c true` (all layers, network none), "
          f"{a.phases} runs, ms:")
    for step, s in phases(tg + ["--"] + cmd, a.phases).items():
        if len(s) >= a.phases // 2:
            print(f"  {step:<52} {statistics.median(s):7.3f}")
    shutil.rmtree(ws, ignore_errors=True)

if __name__ == "__main__":
    main()
