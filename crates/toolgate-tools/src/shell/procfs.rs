//! Just enough of `/proc` to find a command's processes: every process's parent, process
//! group, session, state and start time (`/proc/<pid>/stat`).

use std::collections::{HashMap, HashSet};

/// One line of `/proc/<pid>/stat`, the fields we use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
    /// `R`, `S`, `Z`, …
    pub state: u8,
    /// Start time in clock ticks since boot; with the pid, it names a process uniquely
    /// (pids are reused, start times of a reused pid differ).
    pub start: u64,
}

impl Stat {
    /// A zombie has exited; only its parent's `wait` is missing.
    pub(crate) fn is_zombie(&self) -> bool {
        matches!(self.state, b'Z' | b'X' | b'x')
    }
}

/// Parses a `stat` line. The command name is in parentheses and may itself contain spaces
/// and parentheses, so fields are counted from the last `)`.
pub(crate) fn parse_stat(line: &str) -> Option<Stat> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let pid = line[..open].trim().parse().ok()?;
    let rest: Vec<&str> = line.get(close + 1..)?.split_ascii_whitespace().collect();
    // rest[0] is field 3 (state); field n is rest[n - 3].
    Some(Stat {
        pid,
        state: *rest.first()?.as_bytes().first()?,
        ppid: rest.get(1)?.parse().ok()?,
        pgrp: rest.get(2)?.parse().ok()?,
        session: rest.get(3)?.parse().ok()?,
        start: rest.get(19)?.parse().ok()?,
    })
}

/// The stat of one process, if it exists.
pub(crate) fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Every process visible in `/proc`.
pub(crate) fn all() -> Vec<Stat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

/// Whether any process other than a zombie is in process group `pgid`.
pub(crate) fn group_alive(pgid: i32) -> bool {
    !group_members(pgid, &mut Vec::new()).is_empty()
}

/// The live (not zombie) members of process group `pgid`. `cache` holds members found
/// before: while one of them is still a live member the answer is known without scanning
/// all of `/proc`, which keeps watching a long-running group cheap.
pub(crate) fn group_members(pgid: i32, cache: &mut Vec<ProcId>) -> Vec<ProcId> {
    // kill(-pgid, 0) is cheap and answers "nobody at all" without a scan.
    let Some(pid) = rustix::process::Pid::from_raw(pgid) else {
        return Vec::new();
    };
    if rustix::process::test_kill_process_group(pid).is_err() {
        cache.clear();
        return Vec::new();
    }
    let still = |p: &ProcId| {
        stat(p.pid).is_some_and(|s| s.start == p.start && s.pgrp == pgid && !s.is_zombie())
    };
    cache.retain(still);
    if !cache.is_empty() {
        return cache.clone();
    }
    // Someone is there; zombies count for kill(), not for us.
    *cache = all()
        .iter()
        .filter(|s| s.pgrp == pgid && !s.is_zombie())
        .map(ProcId::from)
        .collect();
    cache.clone()
}

/// A process named by pid and start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ProcId {
    pub pid: i32,
    pub start: u64,
}

impl ProcId {
    /// Whether this very process (not a reuse of its pid) still runs.
    pub(crate) fn alive(&self) -> bool {
        stat(self.pid).is_some_and(|s| s.start == self.start && !s.is_zombie())
    }
}

impl From<&Stat> for ProcId {
    fn from(s: &Stat) -> Self {
        Self {
            pid: s.pid,
            start: s.start,
        }
    }
}

/// The processes that belong to a command whose shell is `leader` (also its process group
/// id): members of the group, descendants of the leader (while it is the same process) and
/// of the members (by parent links), the `known` processes recorded earlier that still run,
/// their descendants, and every process of a session that a known process leads (a
/// `setsid` daemon's children). Never this process or pid 1.
///
/// Group members are trusted as the command's: a process group id cannot be reused while
/// any process is in the group, and callers stop asking once the group is empty.
pub(crate) fn command_processes(
    snapshot: &[Stat],
    leader: ProcId,
    known: &[ProcId],
) -> Vec<ProcId> {
    let me = std::process::id() as i32;
    let by_pid: HashMap<i32, &Stat> = snapshot.iter().map(|s| (s.pid, s)).collect();
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for s in snapshot {
        children.entry(s.ppid).or_default().push(s.pid);
    }
    let same = |k: &ProcId| by_pid.get(&k.pid).filter(|s| s.start == k.start).copied();
    let known_live: Vec<&Stat> = known.iter().filter_map(same).collect();
    let led_sessions: HashSet<i32> = known_live
        .iter()
        .filter(|s| s.session == s.pid)
        .map(|s| s.session)
        .collect();
    let mut stack: Vec<i32> = Vec::new();
    if same(&leader).is_some() {
        stack.push(leader.pid);
    }
    stack.extend(
        snapshot
            .iter()
            .filter(|s| s.pgrp == leader.pid)
            .map(|s| s.pid),
    );
    stack.extend(known_live.iter().map(|s| s.pid));
    stack.extend(
        snapshot
            .iter()
            .filter(|s| led_sessions.contains(&s.session))
            .map(|s| s.pid),
    );
    let mut seen: HashSet<i32> = HashSet::new();
    let mut out = Vec::new();
    while let Some(pid) = stack.pop() {
        if pid <= 1 || pid == me || !seen.insert(pid) {
            continue;
        }
        if let Some(s) = by_pid.get(&pid) {
            out.push(ProcId::from(*s));
        }
        if let Some(kids) = children.get(&pid) {
            stack.extend(kids.iter().copied());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let line =
            "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10";
        let s = parse_stat(line).unwrap();
        assert_eq!(
            (s.pid, s.ppid, s.pgrp, s.session, s.state),
            (4242, 1, 4242, 4242, b'S')
        );
        assert_eq!(s.start, 987654);
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn this_process_is_visible() {
        let me = stat(std::process::id() as i32).unwrap();
        assert!(!me.is_zombie());
        assert!(all().iter().any(|s| s.pid == me.pid));
    }

    fn st(pid: i32, ppid: i32, pgrp: i32, session: i32) -> Stat {
        Stat {
            pid,
            ppid,
            pgrp,
            session,
            state: b'S',
            start: pid as u64,
        }
    }

    #[test]
    fn command_processes_follow_group_parents_and_led_sessions() {
        let snap = [
            st(100, 50, 100, 40),   // the shell
            st(101, 100, 100, 40),  // a child in the group
            st(102, 100, 102, 102), // setsid child, still parented
            st(103, 102, 102, 102), // its child
            st(104, 1, 100, 40),    // orphan still in the group
            st(105, 1, 105, 105),   // a daemon we recorded earlier
            st(106, 1, 105, 105),   // in the daemon's session
            st(107, 1, 107, 107),   // unrelated
            st(50, 1, 50, 40),      // the shell's parent
        ];
        let known = [
            ProcId {
                pid: 105,
                start: 105,
            },
            ProcId { pid: 107, start: 1 },
        ];
        let mut got: Vec<i32> = command_processes(
            &snap,
            ProcId {
                pid: 100,
                start: 100,
            },
            &known,
        )
        .iter()
        .map(|p| p.pid)
        .collect();
        got.sort_unstable();
        assert_eq!(got, [100, 101, 102, 103, 104, 105, 106]);
    }
}
