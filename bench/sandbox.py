#!/usr/bin/env python3
"""Sandbox startup benchmark: `toolgate sandbox run -- sh -c true` against plain `sh -c true`,
`unshare` and bubblewrap with an equivalent read-only-root configuration, plus per-layer
variants of toolgate (layers disabled one at a time). Runs are interleaved (one run of each
configuration per round) so drift hits all of them alike.

Usage: bench/sandbox.py [--toolgate PATH] [--rounds N]
PATH defaults to target/release/toolgate (build with `cargo build --release -p toolgate`).
Prints median / p10 / p90 in ms and the delta of each median over plain sh.
"""
import argparse, os, shutil, statistics, sys, tempfile, time

def spawn_wait(argv):
    t = time.perf_counter_ns()
    pid = os.posix_spawnp(argv[0], argv, os.environ)
    _, status = os.waitpid(pid, 0)
    dt = (time.perf_counter_ns() - t) / 1e6
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed ({status}): {' '.join(argv)}")
    return dt

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--toolgate", default="target/release/toolgate")
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    a = ap.parse_args()
    ws = tempfile.mkdtemp(prefix="tg-bench-", dir=os.getcwd())
    home = os.environ.get("HOME", "/root")
    tg = [os.path.abspath(a.toolgate), "sandbox", "run", "--workspace", ws]
    cmd = ["sh", "-c", "true"]
    configs = {
        "plain sh -c true": cmd,
        "unshare -Umipuf --map-root-user (+net)": ["unshare", "--user", "--map-root-user", "--mount", "--ipc", "--pid", "--uts", "--net", "--fork"] + cmd,
        "toolgate all layers, network none": tg + ["--"] + cmd,
        "toolgate network full": tg + ["--network", "full", "--"] + cmd,
        "toolgate without seccomp": tg + ["--disable-layer", "seccomp", "--"] + cmd,
        "toolgate without landlock": tg + ["--disable-layer", "landlock", "--"] + cmd,
        "toolgate without cgroups": tg + ["--disable-layer", "cgroup_pids", "--disable-layer", "cgroup_memory", "--"] + cmd,
        "toolgate tier B (no user ns)": tg + ["--disable-layer", "user_ns", "--"] + cmd,
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
    for i in range(a.warmup + a.rounds):
        for name, argv in configs.items():
            dt = spawn_wait(argv)
            if i >= a.warmup:
                samples[name].append(dt)
    base = statistics.median(samples["plain sh -c true"])
    print(f"{'configuration':<78} {'median':>8} {'p10':>7} {'p90':>7} {'Δ plain':>8}")
    for name, s in samples.items():
        s.sort()
        med = statistics.median(s)
        p10, p90 = s[len(s) // 10], s[(len(s) * 9) // 10]
        print(f"{name:<78} {med:8.2f} {p10:7.2f} {p90:7.2f} {med - base:+8.2f}")
    shutil.rmtree(ws, ignore_errors=True)

if __name__ == "__main__":
    main()
