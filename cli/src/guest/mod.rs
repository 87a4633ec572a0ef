//! `toolhost new` and `toolhost build`: plugin projects in Rust, Python
//! and JavaScript. The WIT package and the three guest SDKs are built into
//! this binary and written into each project's `.toolhost/` folder, so an
//! installed `toolhost` needs no checkout of this repository.

mod assets;
pub mod build;
pub mod new;
mod project;

pub use project::Lang;
