//! `#[tool]`: turns a plain Rust function into a toolhost tool. Use it as
//! `#[toolhost_sdk::tool]` (the SDK re-exports it and documents it).
//!
//! Everything is checked at compile time: an unsupported parameter type, a
//! missing doc comment, `self`, `async` or generics are compile errors that
//! say what to change.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use serde_json::{Map, Value, json};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, FnArg, GenericArgument, ItemFn, Lit, LitStr, Pat, PathArguments, Type, UnOp};

/// Turns a plain function into the component's tool. See `toolhost_sdk::tool`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand(attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    description: Option<LitStr>,
    schema: Option<LitStr>,
    read_only: bool,
    concurrency_safe: bool,
}

fn parse_options(attr: TokenStream2) -> syn::Result<Options> {
    let mut options = Options::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("name") {
            options.name = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("description") {
            options.description = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("schema") {
            options.schema = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("read_only") {
            options.read_only = true;
        } else if meta.path.is_ident("concurrency_safe") {
            options.concurrency_safe = true;
        } else {
            return Err(meta.error(
                "unknown #[tool] option; use name = \"...\", description = \"...\", schema = \"{...}\", read_only or concurrency_safe",
            ));
        }
        Ok(())
    });
    syn::parse::Parser::parse2(parser, attr)?;
    Ok(options)
}

/// The doc comment lines of `attrs`, trimmed, blank lines dropped, joined
/// with `\n` (as AgentScope joins a docstring's summary and body).
fn doc_text(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &attr.meta
            && let Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) = &nv.value
        {
            for line in s.value().lines() {
                let line = line.trim();
                if !line.is_empty() {
                    lines.push(line.to_string());
                }
            }
        }
    }
    lines.join("\n")
}

fn pascal_case(name: &str) -> String {
    name.split('_')
        .filter(|p| !p.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}

/// The last path segment of a type and its single generic argument, if any.
fn segment(ty: &Type) -> Option<(String, Option<&Type>)> {
    let Type::Path(p) = ty else { return None };
    if p.qself.is_some() {
        return None;
    }
    let last = p.path.segments.last()?;
    let inner = match &last.arguments {
        PathArguments::AngleBracketed(args) if args.args.len() == 1 => match args.args.first() {
            Some(GenericArgument::Type(t)) => Some(t),
            _ => None,
        },
        _ => None,
    };
    Some((last.ident.to_string(), inner))
}

const SUPPORTED: &str = "use String, an integer type, f32/f64, bool, Vec<T>, Option<T> or serde_json::Value, or give the whole input schema with #[tool(schema = \"{...}\")]";

/// The JSON Schema of a parameter type, and whether it is optional.
fn schema_of(ty: &Type) -> syn::Result<(Value, bool)> {
    let unsupported = || {
        syn::Error::new(
            ty.span(),
            format!("unsupported parameter type `{}`: {SUPPORTED}", quote!(#ty).to_string().replace(' ', "")),
        )
    };
    let (name, inner) = segment(ty).ok_or_else(unsupported)?;
    let schema = match (name.as_str(), inner) {
        ("String", None) => json!({"type": "string"}),
        ("i8" | "i16" | "i32" | "i64" | "i128" | "isize", None) => json!({"type": "integer"}),
        ("u8" | "u16" | "u32" | "u64" | "u128" | "usize", None) => json!({"type": "integer", "minimum": 0}),
        ("f32" | "f64", None) => json!({"type": "number"}),
        ("bool", None) => json!({"type": "boolean"}),
        ("Value", None) => json!({}),
        ("Vec", Some(item)) => {
            let (items, optional) = schema_of(item)?;
            if optional {
                return Err(syn::Error::new(
                    item.span(),
                    "Vec<Option<T>> is not supported: use Vec<T> (or serde_json::Value)",
                ));
            }
            json!({"type": "array", "items": items})
        }
        ("Option", Some(inner)) => {
            let (schema, optional) = schema_of(inner)?;
            if optional {
                return Err(syn::Error::new(inner.span(), "Option<Option<T>> is not supported: use Option<T>"));
            }
            return Ok((schema, true));
        }
        _ => return Err(unsupported()),
    };
    Ok((schema, false))
}

/// A `#[default = ...]` value as JSON: a literal number, string or bool
/// (a leading `-` allowed), or an array of those.
fn default_json(expr: &Expr) -> syn::Result<Value> {
    let bad = || {
        syn::Error::new(
            expr.span(),
            "#[default = ...] takes a literal: a number, a string, a bool, or an array of them",
        )
    };
    match expr {
        Expr::Lit(ExprLit { lit, .. }) => match lit {
            Lit::Str(s) => Ok(Value::String(s.value())),
            Lit::Bool(b) => Ok(Value::Bool(b.value)),
            Lit::Int(i) => serde_json::from_str(i.base10_digits()).map_err(|_| bad()),
            Lit::Float(f) => serde_json::from_str(f.base10_digits()).map_err(|_| bad()),
            _ => Err(bad()),
        },
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match default_json(&u.expr)? {
            Value::Number(n) => serde_json::from_str(&format!("-{n}")).map_err(|_| bad()),
            _ => Err(bad()),
        },
        Expr::Array(a) => Ok(Value::Array(a.elems.iter().map(default_json).collect::<syn::Result<_>>()?)),
        Expr::Group(g) => default_json(&g.expr),
        _ => Err(bad()),
    }
}

fn expand(attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    let options = parse_options(attr)?;
    let mut func: ItemFn = syn::parse2(item)?;
    let sig = &func.sig;
    if let Some(a) = &sig.asyncness {
        return Err(syn::Error::new(
            a.span(),
            "a tool function cannot be `async`: tools run synchronously inside their component; make it a plain `fn`",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "a tool function cannot be generic: its input schema must be known; use concrete parameter types",
        ));
    }
    if let Some(v) = &sig.variadic {
        return Err(syn::Error::new(v.span(), "a tool function cannot be variadic"));
    }
    let fn_name = sig.ident.clone();
    let description = match &options.description {
        Some(d) => d.value(),
        None => doc_text(&func.attrs),
    };
    if description.is_empty() {
        return Err(syn::Error::new(
            fn_name.span(),
            format!(
                "add a doc comment (`/// What it does.`) to `{fn_name}`: it is the tool's description for the model (or set #[tool(description = \"...\")])"
            ),
        ));
    }
    let tool_name = options.name.as_ref().map(LitStr::value).unwrap_or_else(|| pascal_case(&fn_name.to_string()));

    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut reads = Vec::new();
    let mut args = Vec::new();
    for input in func.sig.inputs.iter_mut() {
        let arg = match input {
            FnArg::Receiver(r) => {
                return Err(syn::Error::new(
                    r.span(),
                    "a tool function cannot take `self`: make it a free function (outside any `impl`)",
                ));
            }
            FnArg::Typed(arg) => arg,
        };
        let Pat::Ident(ident) = &*arg.pat else {
            return Err(syn::Error::new(
                arg.pat.span(),
                "tool function parameters must be plain names (`name: Type`): each is a field of the input",
            ));
        };
        let param = ident.ident.clone();
        let key = param.to_string().trim_start_matches("r#").to_string();
        if key.starts_with('_') {
            return Err(syn::Error::new(
                param.span(),
                "a tool parameter name cannot start with `_`: it is a field name of the input the model fills in",
            ));
        }
        // Take the parameter's own attributes: its doc and its default.
        let mut default = None;
        let mut kept = Vec::new();
        let doc = doc_text(&arg.attrs);
        for a in arg.attrs.drain(..) {
            if a.path().is_ident("doc") {
                continue;
            }
            if a.path().is_ident("default") {
                let syn::Meta::NameValue(nv) = &a.meta else {
                    return Err(syn::Error::new(
                        a.span(),
                        "write the default as #[default = value], e.g. #[default = 1]",
                    ));
                };
                default = Some(default_json(&nv.value)?);
                continue;
            }
            kept.push(a);
        }
        arg.attrs = kept;
        let ty = (*arg.ty).clone();
        let default_text = default.as_ref().map(Value::to_string);
        if options.schema.is_none() {
            let (mut schema, optional) = schema_of(&ty)?;
            if let Value::Object(map) = &mut schema {
                if !doc.is_empty() {
                    map.insert("description".into(), Value::String(doc));
                }
                if let Some(d) = &default {
                    map.insert("default".into(), d.clone());
                }
            }
            if !optional && default.is_none() {
                required.push(Value::String(key.clone()));
            }
            properties.insert(key.clone(), schema);
        }
        let default_tokens = match &default_text {
            Some(t) => quote!(::core::option::Option::Some(#t)),
            None => quote!(::core::option::Option::None),
        };
        let local = format_ident!("__arg_{}", key);
        reads.push(quote_spanned! {ty.span()=>
            let #local: #ty = ::toolhost_sdk::__function::arg(&input, #key, #default_tokens)?;
        });
        args.push(local);
    }

    let schema_text = match &options.schema {
        Some(text) => {
            let value: Value = serde_json::from_str(&text.value())
                .map_err(|e| syn::Error::new(text.span(), format!("#[tool(schema = ...)] is not JSON: {e}")))?;
            if value.get("type").and_then(Value::as_str) != Some("object") {
                return Err(syn::Error::new(
                    text.span(),
                    "#[tool(schema = ...)] must be a JSON Schema with \"type\": \"object\"",
                ));
            }
            value.to_string()
        }
        None => {
            let mut schema = Map::new();
            schema.insert("type".into(), json!("object"));
            schema.insert("properties".into(), Value::Object(properties));
            if !required.is_empty() {
                schema.insert("required".into(), Value::Array(required));
            }
            Value::Object(schema).to_string()
        }
    };

    let read_only = options.read_only;
    let concurrency_safe = options.concurrency_safe;
    let export = format_ident!("__ToolhostFunctionTool_{}", fn_name);
    let span = Span::call_site();
    Ok(quote_spanned! {span=>
        #func

        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        pub struct #export;

        impl ::toolhost_sdk::Tool for #export {
            type Input = ::toolhost_sdk::serde_json::Value;

            fn spec() -> ::toolhost_sdk::ToolSpec {
                ::toolhost_sdk::ToolSpec::new(#tool_name, #description)
                    .schema(::toolhost_sdk::__function::schema(#schema_text))
                    .read_only(#read_only)
                    .concurrency_safe(#concurrency_safe)
            }

            fn check_permissions(_input: &Self::Input, _ctx: &::toolhost_sdk::Context) -> ::toolhost_sdk::Decision {
                ::toolhost_sdk::Decision::ask(::toolhost_sdk::__function::ASK)
            }

            fn call(input: Self::Input, out: &mut ::toolhost_sdk::Output) -> ::core::result::Result<(), ::toolhost_sdk::ToolError> {
                #(#reads)*
                ::toolhost_sdk::__function::IntoToolResult::into_tool_result(#fn_name(#(#args),*), out)
            }
        }

        ::toolhost_sdk::export_tool!(#export);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(attr: &str, item: &str) -> Result<String, String> {
        expand(attr.parse().unwrap(), item.parse().unwrap()).map(|t| t.to_string()).map_err(|e| e.to_string())
    }

    #[test]
    fn pascal_case_of_fn_names() {
        assert_eq!(pascal_case("greet"), "Greet");
        assert_eq!(pascal_case("word_count"), "WordCount");
    }

    #[test]
    fn schema_from_parameters() {
        let out = expand_str(
            "",
            "/// Greets.\nfn greet(/// Who.\n name: String, #[default = 1] times: u32, shout: Option<bool>, tags: Vec<String>, x: f64, any: serde_json::Value) -> String { String::new() }",
        )
        .unwrap();
        let schema = r#"{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"description\":\"Who.\"},\"times\":{\"type\":\"integer\",\"minimum\":0,\"default\":1},\"shout\":{\"type\":\"boolean\"},\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"x\":{\"type\":\"number\"},\"any\":{}},\"required\":[\"name\",\"tags\",\"x\",\"any\"]}"#;
        assert!(out.contains(schema), "{out}");
        assert!(out.contains("\"Greet\""), "{out}");
    }

    #[test]
    fn bad_definitions_say_what_to_fix() {
        let cases = [
            ("", "fn f(a: String) {}", "add a doc comment"),
            ("", "/// d\nasync fn f(a: String) {}", "cannot be `async`"),
            ("", "/// d\nfn f<T>(a: T) {}", "cannot be generic"),
            ("", "/// d\nfn f(&self) {}", "cannot take `self`"),
            ("", "/// d\nfn f(a: std::path::PathBuf) {}", "unsupported parameter type `std::path::PathBuf`"),
            ("", "/// d\nfn f(#[default = foo()] a: u32) {}", "takes a literal"),
            ("schema = \"[1]\"", "/// d\nfn f(a: u32) {}", "\"type\": \"object\""),
            ("bogus", "/// d\nfn f(a: u32) {}", "unknown #[tool] option"),
        ];
        for (attr, item, expected) in cases {
            let err = expand_str(attr, item).unwrap_err();
            assert!(err.contains(expected), "{item}: {err}");
        }
    }

    #[test]
    fn options_override_name_and_schema() {
        let out = expand_str(
            "name = \"Hi\", schema = \"{\\\"type\\\":\\\"object\\\"}\", read_only",
            "/// d\nfn f(a: std::path::PathBuf) {}",
        )
        .unwrap();
        assert!(out.contains("\"Hi\""), "{out}");
        assert!(out.contains("read_only (true)"), "{out}");
    }
}
