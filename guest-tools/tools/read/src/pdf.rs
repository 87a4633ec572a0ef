//! PDFs: page selection with the reference's exact messages, passthrough as
//! a document, or text extraction per page (`pdf-extract`, pure Rust).

use pdf_extract::Document;

/// Without `pages`, PDFs up to this many pages are read whole.
pub const MAX_PAGES_WITHOUT_RANGE: usize = 10;
/// At most this many pages per request.
pub const MAX_PAGES_PER_REQUEST: usize = 20;

/// What Read returns for a PDF.
#[derive(Debug)]
pub enum PdfOutput {
    /// The document (whole, or a new PDF of the selected pages).
    Document(Vec<u8>),
    /// `--- Page {i}/{total} ---` sections joined by blank lines.
    Text(String),
}

/// Parses `^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$`.
fn parse_range(pages: &str) -> Option<(usize, usize)> {
    let s = pages.trim();
    let (a, b) = match s.split_once('-') {
        Some((a, b)) => (a.trim_end(), Some(b.trim_start())),
        None => (s, None),
    };
    let num = |t: &str| -> Option<usize> {
        if t.is_empty() || !t.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        // Huge numbers are still numbers (Python ints): saturate.
        Some(t.parse::<usize>().unwrap_or(usize::MAX))
    };
    let first = num(a)?;
    let last = match b {
        Some(b) => num(b)?,
        None => first,
    };
    Some((first, last))
}

/// The 1-based inclusive page range to read, or the reference's error text.
pub fn select_pages(pages: Option<&str>, total: usize) -> Result<(usize, usize), String> {
    let Some(pages) = pages else {
        if total > MAX_PAGES_WITHOUT_RANGE {
            return Err(format!(
                "Error: PDF has {total} pages, more than {MAX_PAGES_WITHOUT_RANGE}. You must provide the pages parameter \
                 (e.g. \"1-5\") to read specific pages, max {MAX_PAGES_PER_REQUEST} pages per request."
            ));
        }
        return Ok((1, total));
    };
    let Some((first, last)) = parse_range(pages) else {
        return Err(format!("Error: Invalid pages '{pages}'. Expected a page number or range like \"3\" or \"1-5\"."));
    };
    if first < 1 || first > last || first > total {
        return Err(format!("Error: Invalid pages '{pages}'. PDF has {total} page(s)."));
    }
    let last = last.min(total);
    let k = last - first + 1;
    if k > MAX_PAGES_PER_REQUEST {
        return Err(format!(
            "Error: Requested {k} pages, at most {MAX_PAGES_PER_REQUEST} pages can be read per request."
        ));
    }
    Ok((first, last))
}

fn load(bytes: &[u8]) -> Result<Document, String> {
    let mut doc = Document::load_mem(bytes).map_err(|e| format!("Error reading PDF: {e}"))?;
    if doc.is_encrypted() {
        // Many PDFs are encrypted with an empty user password.
        doc.decrypt("").map_err(|e| format!("Error reading PDF: the document is encrypted ({e})"))?;
    }
    Ok(doc)
}

/// The text of one page (1-based).
fn page_text(doc: &Document, page: u32) -> String {
    let mut text = String::new();
    let ok = {
        let mut sink = pdf_extract::PlainTextOutput::new(&mut text);
        pdf_extract::output_doc_page(doc, &mut sink, page).is_ok()
    };
    if ok {
        return text.trim_matches('\n').to_string();
    }
    match doc.extract_text(&[page]) {
        Ok(t) => t.trim_matches('\n').to_string(),
        Err(e) => format!("[text extraction failed: {e}]"),
    }
}

/// Reads a PDF: `passthrough` (the model accepts `application/pdf`) gives
/// the document, otherwise its text per page.
pub fn read(bytes: &[u8], pages: Option<&str>, passthrough: bool) -> Result<PdfOutput, String> {
    let doc = load(bytes)?;
    let total = doc.get_pages().len();
    let (first, last) = select_pages(pages, total)?;
    if passthrough {
        if first == 1 && last == total {
            return Ok(PdfOutput::Document(bytes.to_vec()));
        }
        return subset(doc, first, last).map(PdfOutput::Document);
    }
    let sections: Vec<String> =
        (first..=last).map(|i| format!("--- Page {i}/{total} ---\n{}", page_text(&doc, i as u32))).collect();
    Ok(PdfOutput::Text(sections.join("\n\n")))
}

/// A new PDF holding only pages `first..=last`.
pub fn subset(mut doc: Document, first: usize, last: usize) -> Result<Vec<u8>, String> {
    let drop: Vec<u32> =
        doc.get_pages().keys().copied().filter(|&p| (p as usize) < first || (p as usize) > last).collect();
    doc.delete_pages(&drop);
    doc.prune_objects();
    let mut out = Vec::new();
    doc.save_to(&mut out).map_err(|e| format!("Error reading PDF: cannot extract pages {first}-{last}: {e}"))?;
    Ok(out)
}
