//! The module worker's sandbox: what a worker does to itself before it loads a module's
//! library, and what the master does to itself before it starts a worker. See the
//! [isolation documentation](super#the-sandbox) for what it guarantees.
//!
//! The worker, in this order, before the system loader maps any module library (a library's
//! load-time constructors run inside the sandbox):
//!
//! 1. sets its address-space limit (`--module_memory_limit_mb`);
//! 2. where the master asked (it runs as root): drops every supplementary group and switches
//!    to the worker's user and group, then checks that it can still read each library, so
//!    that a library only root can read is a clear error rather than the loader's;
//! 3. (Linux) asks for `SIGKILL` when its parent dies (`PR_SET_PDEATHSIG`, set after the
//!    switch of user, which clears it), and ends at once if the master is already gone;
//!    makes itself not dumpable (no other worker of the same user can read its memory
//!    through `/proc`); sets `no_new_privs`;
//! 4. (Linux) installs three seccomp filters on all its threads (see [`filters`]).
//!
//! The master makes itself not dumpable before it starts its first worker ([`protect_master`]).

use std::path::Path;

use super::wire::{DResult, Dec, Enc, Wire};

/// What a worker does to itself before it loads anything, as the host asks in the worker's
/// first request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Confinement {
    /// The address-space limit, MiB (`--module_memory_limit_mb`).
    pub(crate) memory_limit_mb: Option<u64>,
    /// The user and group the worker switches to (uid, gid); `None`: the master's own.
    pub(crate) user: Option<(u32, u32)>,
}

impl Wire for Confinement {
    fn put(&self, e: &mut Enc) {
        self.memory_limit_mb.put(e);
        self.user.map(|(uid, _)| uid).put(e);
        self.user.map(|(_, gid)| gid).put(e);
    }

    fn get(d: &mut Dec<'_>) -> DResult<Confinement> {
        let memory_limit_mb = Option::<u64>::get(d)?;
        let uid = Option::<u32>::get(d)?;
        let gid = Option::<u32>::get(d)?;
        Ok(Confinement { memory_limit_mb, user: uid.zip(gid) })
    }
}

/// The user and group of `nobody` on Linux distributions (the overflow ids).
pub(crate) const NOBODY: (u32, u32) = (65534, 65534);

/// Whose user a module worker runs as (`--module_worker_user`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WorkerUser {
    /// `nobody` (uid and gid 65534) when the master runs as root (effective uid 0), else the
    /// master's own user.
    #[default]
    Auto,
    /// The master's own user, even root (the seccomp filter still applies).
    Master,
    /// This uid and gid (only a master that runs as root can switch to them).
    Id {
        /// The user id.
        uid: u32,
        /// The group id.
        gid: u32,
    },
}

impl WorkerUser {
    /// The uid and gid a worker switches to, or `None` to keep the master's.
    pub(crate) fn resolve(self) -> Option<(u32, u32)> {
        match self {
            // SAFETY: geteuid has no preconditions.
            WorkerUser::Auto => (unsafe { libc::geteuid() } == 0).then_some(NOBODY),
            WorkerUser::Master => None,
            WorkerUser::Id { uid, gid } => Some((uid, gid)),
        }
    }
}

impl std::str::FromStr for WorkerUser {
    type Err = String;
    /// `auto`, `master`, or `UID:GID` (numbers).
    fn from_str(s: &str) -> Result<WorkerUser, String> {
        match s {
            "auto" => Ok(WorkerUser::Auto),
            "master" => Ok(WorkerUser::Master),
            ids => {
                let parsed =
                    ids.split_once(':').and_then(|(u, g)| Some((u.parse().ok()?, g.parse().ok()?)));
                match parsed {
                    Some((uid, gid)) => Ok(WorkerUser::Id { uid, gid }),
                    None => Err(format!("'{s}' is not auto, master or UID:GID (numbers)")),
                }
            }
        }
    }
}

impl std::fmt::Display for WorkerUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerUser::Auto => f.write_str("auto"),
            WorkerUser::Master => f.write_str("master"),
            WorkerUser::Id { uid, gid } => write!(f, "{uid}:{gid}"),
        }
    }
}

/// Master: makes this process not dumpable, once, before its first worker starts: a process
/// of the same user (a worker that runs as the master's user) can then neither trace it nor
/// open its `/proc/<pid>/mem`, `environ` or file descriptors. It also means the master leaves
/// no core dump. Nothing on other systems.
pub(crate) fn protect_master() {
    #[cfg(target_os = "linux")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: a prctl with plain integer arguments.
            if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
                log::warn!(
                    "cannot make the master not dumpable: {}",
                    std::io::Error::last_os_error()
                );
            }
        });
    }
}

/// Worker: confines this process as `confinement` says before `libraries` are loaded; `master`
/// is the master's pid (the parent this worker started with). An error is the worker's answer
/// to its first request: it loads nothing then.
pub(crate) fn confine(
    confinement: &Confinement,
    master: libc::pid_t,
    libraries: &[&Path],
) -> Result<(), String> {
    limit_memory(confinement.memory_limit_mb)?;
    if let Some((uid, gid)) = confinement.user {
        switch_user(uid, gid)?;
        for library in libraries {
            if let Err(e) = std::fs::File::open(library) {
                return Err(format!(
                    "library '{}' cannot be read by the module worker's user (uid {uid}, gid {gid}; --module_worker_user): {e}",
                    library.display()
                ));
            }
        }
    }
    #[cfg(target_os = "linux")]
    linux::confine(master)?;
    #[cfg(not(target_os = "linux"))]
    let _ = master;
    Ok(())
}

/// Sets the address-space limit.
fn limit_memory(memory_limit_mb: Option<u64>) -> Result<(), String> {
    let Some(mb) = memory_limit_mb else { return Ok(()) };
    let bytes = mb.saturating_mul(1 << 20) as libc::rlim_t;
    let limit = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
    // SAFETY: sets a limit of this process from a valid struct.
    if unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) } != 0 {
        return Err(format!(
            "cannot set the memory limit of {mb} MiB: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Drops the supplementary groups and switches group and user (real, effective and saved).
fn switch_user(uid: u32, gid: u32) -> Result<(), String> {
    let failed = |what: &str| {
        format!(
            "cannot switch the module worker to {what} (--module_worker_user): {}",
            std::io::Error::last_os_error()
        )
    };
    // SAFETY: plain credential calls; glibc applies them to every thread of the process.
    unsafe {
        if libc::setgroups(0, std::ptr::null()) != 0 {
            return Err(failed("no supplementary groups"));
        }
        if libc::setgid(gid) != 0 {
            return Err(failed(&format!("gid {gid}")));
        }
        if libc::setuid(uid) != 0 {
            return Err(failed(&format!("uid {uid}")));
        }
        if libc::getuid() != uid || libc::geteuid() != uid || libc::getegid() != gid {
            return Err(format!("the module worker did not switch to uid {uid}, gid {gid}"));
        }
    }
    Ok(())
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeMap;

    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition,
        SeccompFilter, SeccompRule, TargetArch,
    };

    /// The parent-death signal, the check that the master is still the parent, not dumpable,
    /// `no_new_privs`, then the filters on every thread.
    pub(super) fn confine(master: libc::pid_t) -> Result<(), String> {
        let os = || std::io::Error::last_os_error();
        // SAFETY: prctl and getppid with plain integer arguments.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(format!("cannot set the worker's parent-death signal: {}", os()));
            }
            // The master may have died before the signal was asked for.
            if libc::getppid() != master {
                libc::_exit(0);
            }
            if libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 {
                return Err(format!("cannot make the worker not dumpable: {}", os()));
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(format!("cannot set no_new_privs: {}", os()));
            }
        }
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        for filter in filters(pid)? {
            seccompiler::apply_filter_all_threads(&filter)
                .map_err(|e| format!("cannot install the worker's seccomp filter: {e}"))?;
        }
        Ok(())
    }

    /// Opening for writing, creating or truncating.
    const WRITE_FLAGS: u64 = (libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC) as u64;

    fn cond(arg: u8, op: Op, value: u64) -> Result<SeccompCondition, String> {
        SeccompCondition::new(arg, Len::Dword, op, value).map_err(|e| e.to_string())
    }

    fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
        SeccompRule::new(conditions).map_err(|e| e.to_string())
    }

    /// One rule per value: argument `arg` equals one of `values`.
    fn any_of(arg: u8, values: &[u64]) -> Result<Vec<SeccompRule>, String> {
        values.iter().map(|&v| rule(vec![cond(arg, Op::Eq, v)?])).collect()
    }

    fn compile(
        rules: BTreeMap<i64, Vec<SeccompRule>>,
        otherwise: SeccompAction,
        matched: SeccompAction,
    ) -> Result<BpfProgram, String> {
        let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
        let filter =
            SeccompFilter::new(rules, otherwise, matched, arch).map_err(|e| e.to_string())?;
        BpfProgram::try_from(filter).map_err(|e| e.to_string())
    }

    /// The worker's three seccomp filters for a worker whose pid is `pid`, in the order they
    /// are installed (the kernel runs them all and takes the strictest answer; between two
    /// errors, the last installed filter's):
    ///
    /// 1. **Kill** the process (`SIGSYS`) on the calls that only reach outside it: `ptrace`,
    ///    `process_vm_readv`/`writev`, `execve`/`execveat`, `fork`/`vfork`, `clone` without
    ///    `CLONE_THREAD` (a new process), `tkill`, `pidfd_send_signal`, `pidfd_getfd`, and
    ///    `kill`, `tgkill`, `rt_sigqueueinfo`, `rt_tgsigqueueinfo` aimed at another process
    ///    than the worker itself (a panic's `abort()` signals the worker itself: allowed).
    /// 2. **Allow** only the calls a module computing offers needs, each else fails with
    ///    `EPERM`: memory (`mmap`, `mprotect`, `munmap`, `mremap`, `madvise`, `brk`), threads
    ///    (`clone` with `CLONE_THREAD`, `futex`, `set_robust_list`, `rseq`, `sched_yield`,
    ///    `exit`), signals to itself and their handlers, time and sleep, `getrandom`, reading
    ///    and writing open descriptors, `poll`/`epoll`/pipes/`eventfd` on its own descriptors,
    ///    `recvfrom`/`sendto` on the channel, reading files (`openat`/`open` only without
    ///    `O_WRONLY`, `O_RDWR`, `O_CREAT` or `O_TRUNC`; `stat`, `readlink`, `getdents64`),
    ///    process information (`getpid`, `getuid`, `uname`, `sysinfo`, `getrusage`, …),
    ///    limits of itself only (`prlimit64` on pid 0 or its own), `prctl` only to name
    ///    threads and mappings (and `PR_SET_NO_NEW_PRIVS`), `ioctl` only `TCGETS`, `TIOCGWINSZ`, `FIOCLEX`, `FIONCLEX`
    ///    and `FIONREAD`, `fcntl` only to duplicate descriptors and get or set `FD_CLOEXEC`
    ///    (not `F_SETFL` nor `FIONBIO`: standard error is the master's open file, whose
    ///    `O_NONBLOCK` the master's writes would see; not `F_SETOWN`), and `lseek` on
    ///    descriptors above 2. Not allowed, so `EPERM`: every socket call but those on the
    ///    channel (`socket`, `socketpair`, `connect`, `bind`, `listen`, `accept`), creating,
    ///    removing, renaming or changing files, `io_uring`, `bpf`, `perf_event_open`,
    ///    `userfaultfd`, `memfd_create`, namespaces, mounts, keys, System V IPC, scheduling
    ///    and priorities, `pidfd_open`, `kcmp`, and any call added to the kernel later.
    ///    (`seccomp` and `prctl(PR_SET_NO_NEW_PRIVS)` are allowed: more filters only
    ///    restrict.)
    /// 3. `clone3` fails with `ENOSYS`: its flags are behind a pointer a filter cannot read,
    ///    and the C library then creates threads with `clone`, whose flags filter 1 reads.
    pub fn filters(pid: libc::pid_t) -> Result<Vec<BpfProgram>, String> {
        let pid = pid as u64;
        let other_process =
            || -> Result<Vec<SeccompRule>, String> { Ok(vec![rule(vec![cond(0, Op::Ne, pid)?])?]) };
        let mut kill: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        for nr in [
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_process_vm_writev,
            libc::SYS_execve,
            libc::SYS_execveat,
            libc::SYS_tkill,
            libc::SYS_pidfd_send_signal,
            libc::SYS_pidfd_getfd,
            #[cfg(target_arch = "x86_64")]
            libc::SYS_fork,
            #[cfg(target_arch = "x86_64")]
            libc::SYS_vfork,
        ] {
            kill.insert(nr, Vec::new());
        }
        for nr in [
            libc::SYS_kill,
            libc::SYS_tgkill,
            libc::SYS_rt_sigqueueinfo,
            libc::SYS_rt_tgsigqueueinfo,
        ] {
            kill.insert(nr, other_process()?);
        }
        let thread = libc::CLONE_THREAD as u64;
        kill.insert(libc::SYS_clone, vec![rule(vec![cond(0, Op::MaskedEq(thread), 0)?])?]);
        let kill = compile(kill, SeccompAction::Allow, SeccompAction::KillProcess)?;

        let mut allow: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        for nr in ALLOWED {
            allow.insert(*nr, Vec::new());
        }
        let read_only = |arg: u8| -> Result<Vec<SeccompRule>, String> {
            Ok(vec![rule(vec![cond(arg, Op::MaskedEq(WRITE_FLAGS), 0)?])?])
        };
        allow.insert(libc::SYS_openat, read_only(2)?);
        #[cfg(target_arch = "x86_64")]
        allow.insert(libc::SYS_open, read_only(1)?);
        allow.insert(libc::SYS_prlimit64, any_of(0, &[0, pid])?);
        allow.insert(
            libc::SYS_prctl,
            any_of(
                0,
                &[
                    libc::PR_SET_NAME,
                    libc::PR_GET_NAME,
                    libc::PR_SET_VMA,
                    libc::PR_GET_DUMPABLE,
                    // Filters after this one are installed with it (more filters only
                    // restrict).
                    libc::PR_SET_NO_NEW_PRIVS,
                ]
                .map(|v| v as u64),
            )?,
        );
        // The requests' type (`libc::Ioctl`) is `u64` on some targets, `i32` on others.
        #[allow(clippy::unnecessary_cast)]
        allow.insert(
            libc::SYS_ioctl,
            any_of(
                1,
                &[libc::TCGETS, libc::TIOCGWINSZ, libc::FIOCLEX, libc::FIONCLEX, libc::FIONREAD]
                    .map(|v| v as u64),
            )?,
        );
        allow.insert(
            libc::SYS_fcntl,
            any_of(
                1,
                &[
                    libc::F_DUPFD,
                    libc::F_DUPFD_CLOEXEC,
                    libc::F_GETFD,
                    libc::F_SETFD,
                    libc::F_GETFL,
                ]
                .map(|v| v as u64),
            )?,
        );
        allow.insert(libc::SYS_lseek, vec![rule(vec![cond(0, Op::Gt, 2)?])?]);
        let allow = compile(allow, SeccompAction::Errno(libc::EPERM as u32), SeccompAction::Allow)?;

        let clone3 = BTreeMap::from([(libc::SYS_clone3, Vec::new())]);
        let clone3 =
            compile(clone3, SeccompAction::Allow, SeccompAction::Errno(libc::ENOSYS as u32))?;
        Ok(vec![kill, allow, clone3])
    }

    /// The calls filter 2 allows whatever their arguments (filter 1 still kills `clone`
    /// without `CLONE_THREAD` and signals to other processes).
    const ALLOWED: &[i64] = &[
        // Memory.
        libc::SYS_mmap,
        libc::SYS_munmap,
        libc::SYS_mprotect,
        libc::SYS_mremap,
        libc::SYS_madvise,
        libc::SYS_brk,
        libc::SYS_msync,
        libc::SYS_mincore,
        libc::SYS_membarrier,
        // Threads and synchronisation.
        libc::SYS_clone,
        libc::SYS_futex,
        libc::SYS_set_robust_list,
        libc::SYS_set_tid_address,
        libc::SYS_rseq,
        libc::SYS_sched_yield,
        libc::SYS_sched_getaffinity,
        libc::SYS_sched_getparam,
        libc::SYS_sched_getscheduler,
        libc::SYS_exit,
        libc::SYS_exit_group,
        // Signals (to itself: filter 1 kills the others).
        libc::SYS_rt_sigaction,
        libc::SYS_rt_sigprocmask,
        libc::SYS_rt_sigreturn,
        libc::SYS_rt_sigpending,
        libc::SYS_rt_sigtimedwait,
        libc::SYS_rt_sigsuspend,
        libc::SYS_sigaltstack,
        libc::SYS_restart_syscall,
        libc::SYS_kill,
        libc::SYS_tgkill,
        libc::SYS_rt_sigqueueinfo,
        libc::SYS_rt_tgsigqueueinfo,
        // Time.
        libc::SYS_clock_gettime,
        libc::SYS_clock_getres,
        libc::SYS_gettimeofday,
        libc::SYS_nanosleep,
        libc::SYS_clock_nanosleep,
        libc::SYS_getrandom,
        // Open descriptors: the channel, standard error, what it opened to read.
        libc::SYS_read,
        libc::SYS_readv,
        libc::SYS_pread64,
        libc::SYS_preadv,
        libc::SYS_write,
        libc::SYS_writev,
        libc::SYS_close,
        libc::SYS_close_range,
        libc::SYS_dup,
        libc::SYS_dup3,
        libc::SYS_recvfrom,
        libc::SYS_recvmsg,
        libc::SYS_sendto,
        libc::SYS_sendmsg,
        libc::SYS_shutdown,
        libc::SYS_getsockopt,
        libc::SYS_getsockname,
        libc::SYS_getpeername,
        libc::SYS_ppoll,
        libc::SYS_pselect6,
        libc::SYS_epoll_create1,
        libc::SYS_epoll_ctl,
        libc::SYS_epoll_pwait,
        libc::SYS_epoll_pwait2,
        libc::SYS_pipe2,
        libc::SYS_eventfd2,
        // Reading files (opening them: see the rules for openat and open).
        libc::SYS_fstat,
        libc::SYS_newfstatat,
        libc::SYS_statx,
        libc::SYS_statfs,
        libc::SYS_fstatfs,
        libc::SYS_faccessat,
        libc::SYS_faccessat2,
        libc::SYS_readlinkat,
        libc::SYS_getdents64,
        libc::SYS_getcwd,
        // About itself and the system.
        libc::SYS_getpid,
        libc::SYS_gettid,
        libc::SYS_getppid,
        libc::SYS_getuid,
        libc::SYS_geteuid,
        libc::SYS_getgid,
        libc::SYS_getegid,
        libc::SYS_getresuid,
        libc::SYS_getresgid,
        libc::SYS_getgroups,
        libc::SYS_getpgid,
        libc::SYS_getsid,
        libc::SYS_uname,
        libc::SYS_sysinfo,
        libc::SYS_getrusage,
        libc::SYS_times,
        libc::SYS_getpriority,
        libc::SYS_getcpu,
        libc::SYS_getrlimit,
        libc::SYS_setrlimit,
        // More filters (they only restrict; the third filter is installed after this one).
        libc::SYS_seccomp,
        // The x86-64 names of calls other architectures only have as the calls above.
        #[cfg(target_arch = "x86_64")]
        libc::SYS_arch_prctl,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_stat,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_lstat,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_access,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_readlink,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_poll,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_select,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_pipe,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_dup2,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_epoll_wait,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_epoll_create,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_getdents,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_getpgrp,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_time,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_confinement_crosses_the_wire() {
        for c in [
            Confinement::default(),
            Confinement { memory_limit_mb: Some(512), user: Some(NOBODY) },
            Confinement { memory_limit_mb: None, user: Some((0, 7)) },
        ] {
            let mut e = Enc::default();
            c.put(&mut e);
            let mut d = Dec::new(&e.buf);
            assert_eq!(Confinement::get(&mut d).unwrap(), c);
            assert!(d.is_empty());
        }
    }

    #[test]
    fn worker_users_parse_and_print() {
        for (text, user) in [
            ("auto", WorkerUser::Auto),
            ("master", WorkerUser::Master),
            ("1000:100", WorkerUser::Id { uid: 1000, gid: 100 }),
        ] {
            assert_eq!(text.parse::<WorkerUser>().unwrap(), user);
            assert_eq!(user.to_string(), text);
        }
        for bad in ["root", "1000", "1000:", ":5", "-1:5", "nobody:nogroup"] {
            assert!(bad.parse::<WorkerUser>().is_err(), "{bad}");
        }
        assert_eq!(WorkerUser::Master.resolve(), None);
        assert_eq!(WorkerUser::Id { uid: 5, gid: 6 }.resolve(), Some((5, 6)));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_three_filters_compile() {
        let filters = linux::filters(4242).unwrap();
        assert_eq!(filters.len(), 3);
        assert!(filters.iter().all(|f| !f.is_empty() && f.len() < 4096));
    }
}
