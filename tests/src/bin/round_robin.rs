//! `round_robin PORT BACKEND…`: the tests' round-robin HTTP proxy
//! (`toolhost_e2e::proxy`) as a process, for `bench/scale_out.py`: every
//! request to the next backend (`host:port`), until stdin closes. Prints
//! its address on stdout once listening.

fn main() {
    let backends: Vec<String> = std::env::args().skip(1).collect();
    if backends.is_empty() {
        eprintln!("usage: round_robin BACKEND… (host:port of each replica)");
        std::process::exit(2);
    }
    let proxy = toolhost_e2e::proxy::RoundRobin::start(backends);
    println!("{}", proxy.addr);
    // Until whoever started it closes stdin (or goes away).
    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new());
    let counts: Vec<String> =
        proxy.counts.iter().map(|c| c.load(std::sync::atomic::Ordering::Relaxed).to_string()).collect();
    eprintln!("requests per backend: {}", counts.join(" "));
}
