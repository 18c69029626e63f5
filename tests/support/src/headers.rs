//! Request headers for unit tests of code that reads them (auth gates, cookie readers).

use axum::http::{HeaderMap, HeaderValue};

/// A header map holding `pairs` in order; a name given twice appears twice.
pub fn header_map(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(*name, HeaderValue::from_static(value));
    }
    map
}
