//! A plain WASI command: a component of the wrong world for toolhost.
fn main() {
    println!("I am a command, not a tool");
}
