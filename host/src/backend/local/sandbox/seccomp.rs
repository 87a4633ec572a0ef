//! The seccomp filter of a sandboxed process without network: `socket(2)`
//! fails with `EACCES` for every address family (Unix sockets included, so
//! a pathname socket such as the Docker engine's or an SSH agent's cannot be
//! reached either; `socketpair(2)` still works), `io_uring_setup(2)` fails
//! with `ENOSYS` (io_uring could open sockets past the filter), and every
//! system call of another ABI (32-bit `int 0x80`, x32) fails with `EACCES`,
//! so the filter cannot be sidestepped through a foreign system call table.
//!
//! Landlock confines TCP too (ABI 4 and later); this filter is what covers
//! UDP, raw and Unix sockets and kernels below ABI 4.

/// One BPF instruction (`struct sock_filter`).
pub(super) type Instruction = libc::sock_filter;

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// Offsets in `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;

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

/// The no-network filter for this architecture, or `None` where toolhost
/// has none (then the sandbox refuses `network = false` at start-up).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn no_network_filter() -> Option<Vec<Instruction>> {
    let deny_net = ret_errno(libc::EACCES);
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
        jump(JEQ_K, libc::SYS_socket as u32, 2, 0),
        jump(JEQ_K, libc::SYS_io_uring_setup as u32, 2, 0),
        stmt(RET_K, RET_ALLOW),
        stmt(RET_K, deny_net),
        stmt(RET_K, ret_errno(libc::ENOSYS)),
    ]);
    Some(prog)
}

/// The no-network filter for this architecture, or `None` where toolhost
/// has none (then the sandbox refuses `network = false` at start-up).
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn no_network_filter() -> Option<Vec<Instruction>> {
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
