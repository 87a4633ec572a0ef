//! A component built against a future `toolhost:tool@0.2.0`.
wit_bindgen::generate!({
    inline: "
        package toolhost:tool@0.2.0;
        interface tool {
            name: func() -> string;
        }
        world later-release { export tool; }
    ",
});

struct Future;

impl exports::toolhost::tool::tool::Guest for Future {
    fn name() -> String {
        "Future".into()
    }
}

export!(Future);
