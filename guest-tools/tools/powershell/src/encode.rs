//! How a command reaches PowerShell: UTF-16LE, base64, a wrapper script,
//! and `-EncodedCommand` (spec §5.10). No quoting of the user's command is
//! ever needed, whatever it contains.

/// The standard base64 alphabet (RFC 4648 §4), with `=` padding, as
/// `-EncodedCommand` and `[Convert]::FromBase64String` expect.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The UTF-16LE bytes of `text` (what PowerShell calls `Unicode`).
pub fn utf16le(text: &str) -> Vec<u8> {
    text.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

/// `base64(utf16le(text))`: the form `-EncodedCommand` takes.
pub fn encode(text: &str) -> String {
    base64(&utf16le(text))
}

/// The script PowerShell runs: progress output off, UTF-8 output, the
/// user's command decoded from its own base64 and run as a ScriptBlock, and
/// the exit code of the last native program passed on (PowerShell itself
/// would only say 0 or 1).
pub fn wrapper(command: &str) -> String {
    format!(
        "$ProgressPreference = 'SilentlyContinue'\n\
         [Console]::OutputEncoding = [System.Text.UTF8Encoding]::new($false)\n\
         $OutputEncoding = [System.Text.UTF8Encoding]::new($false)\n\
         $__toolhost_command = [System.Text.Encoding]::Unicode.GetString([System.Convert]::FromBase64String('{}'))\n\
         & ([ScriptBlock]::Create($__toolhost_command))\n\
         if ($LASTEXITCODE) {{ exit $LASTEXITCODE }}\n",
        encode(command)
    )
}

/// The argv that runs `command` with the PowerShell executable `exe`.
pub fn argv(exe: &str, command: &str) -> Vec<String> {
    vec![
        exe.to_string(),
        "-NoProfile".into(),
        "-NonInteractive".into(),
        "-EncodedCommand".into(),
        encode(&wrapper(command)),
    ]
}

/// The argv that checks `exe` works (`exit 0`).
pub fn probe_argv(exe: &str) -> Vec<String> {
    [exe, "-NoLogo", "-NoProfile", "-NonInteractive", "-Command", "exit 0"].map(String::from).to_vec()
}
