//! The random ids the chat hands out: a browser session's id (its cookie) and a stored
//! file's id. Both are 128 random bits as 32 lowercase hex digits, and both end up in file
//! names under `history_dir`, so the one check here is what keeps anything else (`../`, an
//! upper-case twin) from naming a file. At the bottom: the gate, the files and the frames
//! all check ids, and this module needs none of them.

/// A fresh session id: 128 random bits as 32 lowercase hex digits.
pub(crate) fn new_session_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Whether `id` looks like one of ours; it names a file, so nothing else may pass.
pub(crate) fn valid_session_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether `id` has the form of a file id (it names a file, so nothing else may pass).
pub(crate) fn valid_file_id(id: &str) -> bool {
    valid_session_id(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_32_lowercase_hex_digits_make_a_session_id() {
        assert!(valid_session_id(&new_session_id()));
        assert!(!valid_session_id("../../etc/passwd0000000000000000"));
        assert!(!valid_session_id("ABCDEF0123456789abcdef0123456789"));
        assert!(!valid_session_id("abc"));
        assert_ne!(new_session_id(), new_session_id());
    }
}
