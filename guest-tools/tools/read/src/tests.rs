use super::*;
use crate::pdf::{PdfOutput, select_pages};

/// A minimal PDF with one page per entry, each showing its text in Helvetica.
pub fn make_pdf(pages: &[&str]) -> Vec<u8> {
    let n = pages.len();
    let mut objects: Vec<String> = Vec::new();
    objects.push("<< /Type /Catalog /Pages 2 0 R >>".into());
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    objects.push(format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")));
    objects.push("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".into());
    for (i, text) in pages.iter().enumerate() {
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            5 + 2 * i
        ));
        let stream = format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET");
        objects.push(format!("<< /Length {} >>\nstream\n{stream}\nendstream", stream.len()));
    }
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).as_bytes(),
    );
    out
}

#[test]
fn numbered_lines_conformance() {
    // Spec §14.14: CRLF normalised, long lines truncated at the setting.
    let raw = format!("line1\r\nline2\n{}\nfoo foo\n", "x".repeat(30));
    let text = file_common::normalize_newlines(&raw);
    assert_eq!(
        format_lines(&text, 1, 2000, 10),
        "     1\tline1\n     2\tline2\n     3\txxxxxxxxxx[truncated]\n     4\tfoo foo"
    );
    assert_eq!(format_lines(&text, 2, 2, 10), "     2\tline2\n     3\txxxxxxxxxx[truncated]");
    assert_eq!(format_lines(&text, 99, 2000, 10), "");
    assert_eq!(format_lines("", 1, 2000, 10), "");
    // Exactly max characters is not truncated; characters, not bytes.
    assert_eq!(format_lines("ééé\n", 1, 10, 3), "     1\tééé");
    assert_eq!(format_lines("éééé", 1, 10, 3), "     1\tééé[truncated]");
    // No trailing newline on the last line; a final newline adds no line.
    assert_eq!(format_lines("a\nb", 1, 10, 10), "     1\ta\n     2\tb");
    assert_eq!(format_lines("a\n\n", 1, 10, 10), "     1\ta\n     2\t");
    assert_eq!(format_lines("a\n", 1, 0, 10), "");
    // Wide line numbers keep their digits.
    let many: String = (1..=1_000_001).map(|i| format!("{i}\n")).collect();
    assert_eq!(format_lines(&many, 1_000_000, 2, 10), "1000000\t1000000\n1000001\t1000001");
}

#[test]
fn binary_sniffing() {
    assert!(looks_binary(b"ab\0cd"));
    assert!(!looks_binary(b"plain text"));
    let mut late = vec![b'a'; BINARY_SNIFF_BYTES];
    late.push(0);
    assert!(!looks_binary(&late));
}

#[test]
fn kinds_by_extension() {
    assert_eq!(kind_of("/a/b.PNG"), Kind::Image("image/png"));
    assert_eq!(kind_of("/a/b.jpeg"), Kind::Image("image/jpeg"));
    assert_eq!(kind_of("/a/b.tif"), Kind::Image("image/tiff"));
    assert_eq!(kind_of("/a/b.ico"), Kind::Image("image/x-icon"));
    assert_eq!(kind_of("/a/doc.Pdf"), Kind::Pdf);
    assert_eq!(kind_of("/a/x.xyz"), Kind::Text);
    assert_eq!(kind_of("/a/.png"), Kind::Text);
    assert_eq!(kind_of("/a.png/b"), Kind::Text);
}

#[test]
fn settings_parsing() {
    let d = Settings::default();
    assert!(d.accepts("image/png") && !d.accepts("image/bmp") && !d.accepts("application/pdf"));
    assert_eq!(d.accepted_image_types(), ["image/png", "image/jpeg", "image/gif", "image/webp"]);
    let s = Settings::from_config(
        &serde_json::json!({"max_line_characters": 10, "model_input_types": ["image/*", "application/pdf"]}),
    );
    assert_eq!(s.max_line_characters, 10);
    assert!(s.accepts("image/bmp") && s.accepts("application/pdf"));
    assert_eq!(s.accepted_image_types(), ["image/*"]);
    // Wrong types keep the defaults.
    let s = Settings::from_config(&serde_json::json!({"max_line_characters": -1, "model_input_types": "image/png"}));
    assert_eq!(s, Settings::default());
    let none = Settings::from_config(&serde_json::json!({"model_input_types": []}));
    assert!(none.accepted_image_types().is_empty());
    assert!(description(&none).contains("text is extracted per page"));
    assert!(!description(&none).contains("Images ("));
    assert!(description(&d).contains("Images (image/png, image/jpeg, image/gif, image/webp)"));
}

#[test]
fn page_selection_messages() {
    assert_eq!(select_pages(None, 10), Ok((1, 10)));
    assert_eq!(
        select_pages(None, 11).unwrap_err(),
        "Error: PDF has 11 pages, more than 10. You must provide the pages parameter (e.g. \"1-5\") to read specific pages, max 20 pages per request."
    );
    assert_eq!(select_pages(Some(" 2 - 3 "), 5), Ok((2, 3)));
    assert_eq!(select_pages(Some("4"), 5), Ok((4, 4)));
    assert_eq!(select_pages(Some("3-99"), 5), Ok((3, 5)));
    assert_eq!(
        select_pages(Some("a-b"), 5).unwrap_err(),
        "Error: Invalid pages 'a-b'. Expected a page number or range like \"3\" or \"1-5\"."
    );
    assert!(select_pages(Some("1,2"), 5).is_err());
    assert!(select_pages(Some("-2"), 5).is_err());
    for bad in ["0", "3-2", "6"] {
        assert_eq!(
            select_pages(Some(bad), 5).unwrap_err(),
            format!("Error: Invalid pages '{bad}'. PDF has 5 page(s).")
        );
    }
    assert_eq!(
        select_pages(Some("1-21"), 30).unwrap_err(),
        "Error: Requested 21 pages, at most 20 pages can be read per request."
    );
    assert_eq!(select_pages(Some("11-30"), 30), Ok((11, 30)));
}

#[test]
fn pdf_text_and_passthrough() {
    let bytes = make_pdf(&["Hello one", "Hello two", "Hello three"]);
    match pdf::read(&bytes, Some("2-3"), false).unwrap() {
        PdfOutput::Text(t) => {
            assert!(t.starts_with("--- Page 2/3 ---\n"), "{t}");
            assert!(t.contains("Hello two") && t.contains("\n\n--- Page 3/3 ---\nHello three"), "{t}");
            assert!(!t.contains("Hello one"));
        }
        other => panic!("{other:?}"),
    }
    match pdf::read(&bytes, None, true).unwrap() {
        PdfOutput::Document(d) => assert_eq!(d, bytes),
        other => panic!("{other:?}"),
    }
    match pdf::read(&bytes, Some("2-3"), true).unwrap() {
        PdfOutput::Document(d) => {
            let sub = pdf_extract::Document::load_mem(&d).unwrap();
            assert_eq!(sub.get_pages().len(), 2);
        }
        other => panic!("{other:?}"),
    }
    let eleven: Vec<String> = (1..=11).map(|i| format!("p{i}")).collect();
    let refs: Vec<&str> = eleven.iter().map(String::as_str).collect();
    assert!(pdf::read(&make_pdf(&refs), None, false).unwrap_err().starts_with("Error: PDF has 11 pages"));
    assert!(pdf::read(b"not a pdf", None, false).unwrap_err().starts_with("Error reading PDF: "));
}

#[test]
fn suggestions_match_their_call() {
    let ctx = Context {
        mode: toolhost_sdk::PermissionMode::Default,
        working_dirs: vec![],
        cwd: "/".into(),
        home: "/root".into(),
        tool_config: serde_json::json!({}),
    };
    for p in ["/a/b/c.txt", "/x[1]/y*.txt"] {
        let input = Input { file_path: p.into(), offset: 1, limit: 2000, pages: None };
        let rules = Read::suggestions(&input, &ctx);
        assert_eq!(rules.len(), 1);
        let content = rules[0].rule_content.clone().unwrap();
        assert!(Read::match_rule(PermissionBehavior::Allow, &content, &input, &ctx), "{content} vs {p}");
    }
    // A relative path gets none (the call fails; `**` would allow every file).
    let relative = Input { file_path: "rel.txt".into(), offset: 1, limit: 2000, pages: None };
    assert!(Read::suggestions(&relative, &ctx).is_empty());
}
