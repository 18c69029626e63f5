//! `switchboard memory reindex` and `switchboard memory stats`: the operator's view of recall
//! by meaning. `reindex` embeds every memory that has no vector of the configured model
//! (all of them with `--all`) in the foreground, with progress on a terminal; the gateway's
//! own task does the same in the background, so running both only shares the work.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use super::{Embedder, Semantic, Step};
use crate::config::Config;
use crate::store::{self, Store};

/// Embed what is pending (everything, with `all`), showing progress on a terminal.
pub async fn reindex(config: &Config, all: bool) -> anyhow::Result<ExitCode> {
    let Some(semantic) = semantic(config)? else {
        eprintln!("no [memory.embeddings] in the config: recall is by full text only");
        return Ok(ExitCode::FAILURE);
    };
    let store = store::connect(&config.gateway.database_url).await?;
    store.prepare_vectors(semantic.model()).await?;
    if all {
        let dropped = store.drop_vectors().await?;
        println!("dropped {dropped} vectors");
    }
    let model = semantic.model();
    let start = store.vector_counts(model).await?;
    let (total, mut done) = (start.pending(), 0u64);
    let terminal = std::io::stderr().is_terminal();
    loop {
        let step = semantic.embed_pending(store.as_ref()).await?;
        let (Step::More(n) | Step::Embedded(n)) = step else {
            eprintln!();
            eprintln!(
                "the embedding endpoint failed (see the log line above); {done} of {total} embedded"
            );
            return Ok(ExitCode::FAILURE);
        };
        done += n as u64;
        if terminal {
            eprint!("\rembedded {done} of {total}");
            let _ = std::io::stderr().flush();
        }
        if matches!(step, Step::Embedded(_)) {
            break;
        }
    }
    if terminal {
        eprintln!();
    }
    println!(
        "embedded {done} memories with {} ({} dimensions)",
        model.name, model.dims
    );
    Ok(ExitCode::SUCCESS)
}

/// How many memories there are, and with embeddings how many have their vector.
pub async fn stats(config: &Config) -> anyhow::Result<ExitCode> {
    let store = store::connect(&config.gateway.database_url).await?;
    print!("{}", stats_text(config, store.as_ref()).await?);
    Ok(ExitCode::SUCCESS)
}

/// The lines `memory stats` prints.
pub async fn stats_text(config: &Config, store: &dyn Store) -> anyhow::Result<String> {
    let Some(embeddings) = &config.memory.embeddings else {
        let counts = store
            .vector_counts(&crate::store::VectorModel {
                name: String::new(),
                dims: 0,
            })
            .await?;
        return Ok(format!(
            "memories: {}\nembeddings: not configured (recall is by full text only)\n",
            counts.memories
        ));
    };
    let model = crate::store::VectorModel {
        name: embeddings.model.to_string(),
        dims: embeddings.dimensions,
    };
    let counts = store.vector_counts(&model).await?;
    Ok(format!(
        "memories: {}\nembedded: {} ({}, {} dimensions)\npending: {}\nmax_per_scope: {}\n",
        counts.memories,
        counts.embedded,
        model.name,
        model.dims,
        counts.pending(),
        config.memory.max_per_scope
    ))
}

/// Recall by meaning as the config describes it, without a background task.
fn semantic(config: &Config) -> anyhow::Result<Option<Semantic>> {
    let Some(embeddings) = &config.memory.embeddings else {
        return Ok(None);
    };
    let embedder = Embedder::new(embeddings, &config.provider)?;
    Ok(Some(Semantic::new(embedder, embeddings.min_similarity)))
}
