//! Text out of a PDF (with `pdf-extract`), so the model's file tools can read what a PDF says.

use switchboard_channel::Attachment;

/// Whether `file` is a PDF, by type or by name.
pub(super) fn is_pdf(file: &Attachment) -> bool {
    file.mime.as_deref() == Some("application/pdf")
        || file.name.to_ascii_lowercase().ends_with(".pdf")
}

/// The text of every page; an unreadable or encrypted PDF is an error, never a panic.
pub(super) fn extract_text(bytes: &[u8]) -> Result<String, String> {
    // The extractor has panicked on malformed files in the past; a bad upload must not take
    // the turn down with it.
    let bytes = bytes.to_vec();
    std::panic::catch_unwind(move || pdf_extract::extract_text_from_mem(&bytes))
        .map_err(|_| "the PDF could not be read".to_owned())?
        .map_err(|e| e.to_string())
}
