//! The seccomp filter of a sandboxed process.
//!
//! Always: `ioctl(2)` with `TIOCSTI` (push bytes into a terminal's input,
//! for its shell to run) or `TIOCLINUX` (which can do the same on a
//! virtual console) fails with `EPERM`, whatever the descriptor. A
//! sandboxed process has no controlling terminal and Landlock gives it no
//! ioctl on a terminal it opens; this is the wall behind those. The kernel
//! reads the request number as 32 bits, so only the low half is compared.
//!
//! Without network (`network = false`): `socket(2)` fails with `EACCES` for
//! every address family (Unix sockets included, so a pathname socket such
//! as the Docker engine's or an SSH agent's cannot be reached either;
//! `socketpair(2)` still works), and `io_uring_setup(2)` fails with
//! `ENOSYS` (io_uring could open sockets past the filter).
//!
//! Every system call of another ABI (32-bit `int 0x80`, x32) fails with
//! `EACCES`, so the filter cannot be sidestepped through a foreign system
//! call table. Landlock confines TCP too (ABI 4 and later); this filter is
//! what covers UDP, raw and Unix sockets and kernels below ABI 4.

/// One BPF instruction (`struct sock_filter`).
pub(super) type Instruction = libc::sock_filter;

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// Offsets in `struct seccomp_data`: the system call number, the
/// architecture, and the low half of the second argument (little-endian).
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARG1_LOW: u32 = 24;

const RET_ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const fn ret_errno(errno: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO | (errno as u32 & libc::SECCOMP_RET_DATA)
}

#[cfg(target_arch = "x86_64")]
const NATIVE_ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const NATIVE_ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64

/// x32 system calls share the x86_64 table with this bit set.
#[cfg(target_arch = "x86_64")]
const X32_BIT: u32 = 0x4000_0000;

const fn stmt(code: u16, k: u32) -> Instruction {
    Instruction { code, jt: 0, jf: 0, k }
}

const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Instruction {
    Instruction { code, jt, jf, k }
}

/// The filter for this architecture (sockets refused unless `network`),
/// or `None` where toolhost has none (then the sandbox refuses
/// `network = false` at start-up, and relies on Landlock for terminals).
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_endian = "little"))]
pub(super) fn filter(network: bool) -> Option<Vec<Instruction>> {
    let mut prog = vec![
        stmt(LD_W_ABS, ARCH),
        jump(JEQ_K, NATIVE_ARCH, 1, 0),
        stmt(RET_K, ret_errno(libc::EACCES)),
        stmt(LD_W_ABS, NR),
    ];
    #[cfg(target_arch = "x86_64")]
    {
        prog.push(jump(JGE_K, X32_BIT, 0, 1));
        prog.push(stmt(RET_K, ret_errno(libc::EACCES)));
    }
    prog.extend([
        // ioctl: its request; anything else skips these six.
        jump(JEQ_K, libc::SYS_ioctl as u32, 0, 5),
        stmt(LD_W_ABS, ARG1_LOW),
        jump(JEQ_K, libc::TIOCSTI as u32, 2, 0),
        jump(JEQ_K, libc::TIOCLINUX as u32, 1, 0),
        stmt(RET_K, RET_ALLOW),
        stmt(RET_K, ret_errno(libc::EPERM)),
    ]);
    if !network {
        // The accumulator still holds the system call number here.
        prog.extend([
            jump(JEQ_K, libc::SYS_socket as u32, 2, 0),
            jump(JEQ_K, libc::SYS_io_uring_setup as u32, 2, 0),
            stmt(RET_K, RET_ALLOW),
            stmt(RET_K, ret_errno(libc::EACCES)),
            stmt(RET_K, ret_errno(libc::ENOSYS)),
        ]);
    } else {
        prog.push(stmt(RET_K, RET_ALLOW));
    }
    Some(prog)
}

/// The filter for this architecture, or `None` where toolhost has none
/// (then the sandbox refuses `network = false` at start-up).
#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_endian = "little")))]
pub(super) fn filter(_network: bool) -> Option<Vec<Instruction>> {
    None
}

/// Installs `prog` on the calling thread. Async-signal-safe (one `prctl`),
/// for the child between `fork` and `exec`; `no_new_privs` must be set.
pub(super) fn install(prog: &[Instruction]) -> std::io::Result<()> {
    let fprog = libc::sock_fprog { len: prog.len() as u16, filter: prog.as_ptr() as *mut Instruction };
    // SAFETY: `fprog` points at `prog`, which outlives the call; the kernel
    // copies the program.
    let rc = unsafe { libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &fprog as *const libc::sock_fprog) };
    if rc == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use super::*;

    /// What a process under `filter(network)` gets: 0 when every check holds,
    /// else the number of the first that failed (run in a forked child).
    fn run_filtered(network: bool) -> i32 {
        let prog = filter(network).expect("a filter for this architecture");
        // SAFETY: the child makes only system calls, then `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            // SAFETY: system calls on plain integers and a local byte.
            let code = unsafe {
                let errno = || *libc::__errno_location();
                let ioctl = |request: u64| {
                    let mut byte = b'x';
                    (libc::syscall(libc::SYS_ioctl, 0, request, &mut byte), errno())
                };
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || install(&prog).is_err() {
                    1
                } else if ioctl(libc::TIOCSTI as u64) != (-1, libc::EPERM) {
                    2
                } else if ioctl(libc::TIOCSTI as u64 | 1 << 32) != (-1, libc::EPERM) {
                    // The kernel reads the request as 32 bits: high bits are no way around.
                    3
                } else if ioctl(libc::TIOCLINUX as u64) != (-1, libc::EPERM) {
                    4
                } else if ioctl(libc::FIONREAD as u64).1 == libc::EPERM {
                    // Other requests reach the driver.
                    5
                } else if (libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) < 0) == network {
                    6
                } else {
                    0
                }
            };
            // SAFETY: ends the child without running the parent's destructors.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status), "the child died: {status:#x}");
        libc::WEXITSTATUS(status)
    }

    #[test]
    fn terminal_input_ioctls_are_refused_on_every_descriptor_and_sockets_without_network() {
        assert_eq!(run_filtered(false), 0, "without network");
        assert_eq!(run_filtered(true), 0, "with network");
    }
}
