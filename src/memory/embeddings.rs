//! The `[memory.embeddings]` endpoint: an OpenAI-compatible `POST <base_url>/embeddings`
//! (`{"model", "input": [...], "dimensions"}` in; `data[i].embedding` out, by `index`).
//! The URL and key are the operator's, as the provider's are; every answer is checked
//! (one vector per text, each of the configured length) before anything is stored.

use std::time::Duration;

use serde_json::{Value, json};

use crate::config::{EmbeddingsConfig, ProviderConfig};
use crate::store::VectorModel;

/// Why the endpoint gave no vectors.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// No answer (refused, timed out, cut off).
    #[error("the embedding endpoint did not answer: {0}")]
    Unreachable(String),
    /// An answer other than 2xx.
    #[error("the embedding endpoint answered {status}: {message}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The API's error message, when it gave one.
        message: String,
    },
    /// A 2xx answer that is not what was asked for.
    #[error("the embedding endpoint's answer is unusable: {0}")]
    Malformed(String),
}

/// A client of one embedding endpoint and model.
#[derive(Clone)]
pub struct Embedder {
    http: reqwest::Client,
    url: String,
    api_key: Option<String>,
    model: VectorModel,
}

impl Embedder {
    /// The client `config` describes; the base URL and key default to `provider`'s.
    pub fn new(config: &EmbeddingsConfig, provider: &ProviderConfig) -> anyhow::Result<Self> {
        let base = match &config.base_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => provider.base_url().to_owned(),
        };
        let key = match &config.api_key {
            Some(key) => key.expose(),
            None => provider.api_key.expose(),
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(config.timeout_secs.clamp(1, 10)))
            .timeout(Duration::from_secs(config.timeout_secs.max(1)))
            .build()?;
        Ok(Self {
            http,
            url: format!("{base}/embeddings"),
            api_key: key.filter(|k| !k.is_empty()).map(str::to_owned),
            model: VectorModel {
                name: config.model.to_string(),
                dims: config.dimensions,
            },
        })
    }

    /// The model and length of the vectors this client makes.
    pub fn model(&self) -> &VectorModel {
        &self.model
    }

    /// One vector per text, in order.
    pub async fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = json!({
            "model": self.model.name,
            "input": texts,
            "dimensions": self.model.dims,
            "encoding_format": "float",
        });
        let mut request = self.http.post(&self.url).json(&body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request
            .send()
            .await
            .map_err(|e| EmbedError::Unreachable(e.without_url().to_string()))?;
        let status = response.status();
        let answer: Value = response
            .json()
            .await
            .map_err(|e| EmbedError::Unreachable(e.without_url().to_string()))
            .or_else(|e| {
                if status.is_success() {
                    Err(e)
                } else {
                    Ok(Value::Null)
                }
            })?;
        if !status.is_success() {
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            return Err(EmbedError::Status {
                status: status.as_u16(),
                message: message.chars().take(300).collect(),
            });
        }
        vectors(&answer, texts.len(), self.model.dims)
    }
}

/// The `count` vectors of an answer, ordered by their `index`, each `dims` long.
fn vectors(answer: &Value, count: usize, dims: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    let bad = |what: String| Err(EmbedError::Malformed(what));
    let Some(data) = answer["data"].as_array() else {
        return bad("no `data` array".into());
    };
    if data.len() != count {
        return bad(format!("{} vectors for {count} texts", data.len()));
    }
    let mut out = vec![Vec::new(); count];
    for item in data {
        let index = item["index"].as_u64().unwrap_or(u64::MAX) as usize;
        let Some(slot) = out.get_mut(index).filter(|v| v.is_empty()) else {
            return bad(format!("a vector with index {}", item["index"]));
        };
        let Some(values) = item["embedding"].as_array() else {
            return bad("an `embedding` that is not an array of numbers".into());
        };
        if values.len() != dims {
            return bad(format!(
                "vectors of {} values, where [memory.embeddings] dimensions = {dims}",
                values.len()
            ));
        }
        for v in values {
            match v.as_f64() {
                Some(v) if v.is_finite() => slot.push(v as f32),
                _ => return bad("an `embedding` that is not an array of numbers".into()),
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_ordered_by_index_and_checked_for_length() {
        let answer = json!({"data": [
            {"index": 1, "embedding": [0.0, 1.0]},
            {"index": 0, "embedding": [1.0, 0.0]},
        ]});
        let got = vectors(&answer, 2, 2).unwrap();
        assert_eq!(got, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        assert!(vectors(&answer, 2, 3).is_err());
        assert!(vectors(&answer, 3, 2).is_err());
        let twice = json!({"data": [
            {"index": 0, "embedding": [1.0, 0.0]},
            {"index": 0, "embedding": [1.0, 0.0]},
        ]});
        assert!(vectors(&twice, 2, 2).is_err());
        let text = json!({"data": [{"index": 0, "embedding": "AAAA"}]});
        assert!(vectors(&text, 1, 2).is_err());
    }
}
