//! The compose files as a fresh clone has them, read the way Compose reads them: later
//! files merged over earlier ones, `${VAR:-default}` with no `.env` and no variable set.

use std::path::Path;

use serde_yaml_ng::{Mapping, Value};
use switchboard::config;

use super::{image_copies, image_env, repo, tracked};

const BASE: &str = "docker-compose.yml";
const POSTGRES: &str = "docker-compose.postgres.yml";

/// `files` merged in order: mappings key by key (a later scalar or list wins), as
/// `docker compose -f a -f b` does for the keys these files use.
fn merged(files: &[&str]) -> Value {
    let mut out = Value::Mapping(Mapping::new());
    for file in files {
        let text = std::fs::read_to_string(repo().join(file)).expect(file);
        let value: Value = serde_yaml_ng::from_str(&interpolate(&text)).expect(file);
        merge(&mut out, value);
    }
    out
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Mapping(into), Value::Mapping(from)) => {
            for (key, value) in from {
                match into.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        into.insert(key, value);
                    }
                }
            }
        }
        (into, from) => *into = from,
    }
}

/// `${VAR:-default}` → default and `${VAR}` → "" (nothing is set on a fresh clone).
fn interpolate(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').expect("${ closes");
        if let Some((_, default)) = after[..end].split_once(":-") {
            out.push_str(default);
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

fn service<'a>(compose: &'a Value, name: &str) -> Option<&'a Value> {
    compose.get("services")?.get(name)
}

/// The gateway service's `environment` as pairs.
fn gateway_env(compose: &Value) -> Vec<(String, String)> {
    let env = service(compose, "switchboard")
        .and_then(|s| s.get("environment"))
        .and_then(Value::as_mapping)
        .expect("switchboard.environment is a mapping");
    env.iter()
        .map(|(k, v)| {
            let value = match v {
                Value::String(s) => s.clone(),
                other => serde_yaml_ng::to_string(other).unwrap().trim().to_owned(),
            };
            (k.as_str().unwrap().to_owned(), value)
        })
        .collect()
}

/// The config the gateway would run on: the baked config, the image's ENV and then the
/// service's environment (`SWITCHBOARD__…` keys), through the gateway's own loader.
fn gateway_config(compose: &Value) -> config::Config {
    let (source, _) = image_copies()
        .into_iter()
        .find(|(source, _)| source.ends_with(".toml"))
        .expect("the Dockerfile bakes a config");
    let text = std::fs::read_to_string(repo().join(&source)).unwrap();
    let overrides: Vec<(String, String)> = image_env()
        .into_iter()
        .chain(gateway_env(compose))
        .filter(|(k, _)| k.starts_with("SWITCHBOARD__"))
        .collect();
    config::parse(&text, &source, &overrides).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_file_compose_mounts_or_the_dockerfile_copies_is_in_a_fresh_clone() {
    for file in [BASE, POSTGRES] {
        assert!(tracked(Path::new(file)), "{file} is not committed");
    }
    let compose = merged(&[BASE, POSTGRES]);
    let declared = compose.get("volumes").and_then(Value::as_mapping).unwrap();
    let services = compose.get("services").and_then(Value::as_mapping).unwrap();
    let mut binds = 0;
    for (name, svc) in services {
        let mounts = svc.get("volumes").and_then(Value::as_sequence);
        for mount in mounts.into_iter().flatten() {
            let source = mount.as_str().unwrap().split(':').next().unwrap();
            if source.starts_with('.') || source.starts_with('/') {
                binds += 1;
                assert!(
                    tracked(Path::new(source)),
                    "{name:?} mounts {source}, which a fresh clone does not have \
                     (Docker would create an empty directory in its place)"
                );
            } else {
                assert!(declared.contains_key(source), "volume {source} undeclared");
            }
        }
        let env_files = svc.get("env_file").and_then(Value::as_sequence);
        for entry in env_files.into_iter().flatten() {
            let optional = entry.get("required").and_then(Value::as_bool) == Some(false);
            let path = entry
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default();
            assert!(optional || tracked(Path::new(path)), "env_file {path}");
        }
    }
    assert!(binds >= 1, "the config directory is mounted");
    assert!(tracked(Path::new("Dockerfile")));
    let ignored = std::fs::read_to_string(repo().join(".dockerignore")).unwrap();
    for (source, _) in image_copies() {
        assert!(
            tracked(Path::new(&source)),
            "the Dockerfile copies {source}"
        );
        let excluded = ignored.lines().any(|l| l.trim() == source);
        assert!(!excluded, ".dockerignore leaves {source} out of the build");
    }
}

#[test]
fn the_user_config_is_an_optional_override_of_the_baked_one() {
    let env = image_env();
    let get = |key: &str| env.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let (user, baked) = (
        get("SWITCHBOARD_CONFIG"),
        get("SWITCHBOARD_FALLBACK_CONFIG"),
    );
    let (user, baked) = (user.expect("user config path"), baked.expect("baked path"));
    assert!(
        image_copies().iter().any(|(_, dest)| *dest == baked),
        "the fallback {baked} is a file the Dockerfile copies in"
    );
    let compose = merged(&[BASE]);
    let mounts = service(&compose, "switchboard")
        .and_then(|s| s.get("volumes"))
        .and_then(Value::as_sequence)
        .unwrap();
    let dir = Path::new(&user)
        .parent()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let mounted = mounts
        .iter()
        .filter_map(Value::as_str)
        .any(|m| m.split(':').nth(1) == Some(&dir));
    assert!(
        mounted,
        "compose mounts a directory at {dir}, where {user} may be"
    );
    assert!(
        !baked.starts_with(&format!("{dir}/")),
        "the mount would hide the baked config"
    );
}

#[test]
fn the_default_setup_runs_on_sqlite_without_a_database_service() {
    let compose = merged(&[BASE]);
    assert!(service(&compose, "postgres").is_none());
    let config = gateway_config(&compose);
    assert_eq!(
        &*config.gateway.database_url,
        "sqlite:///data/switchboard.db"
    );
    assert_eq!(&*config.gateway.listen, "0.0.0.0:8080");
}

#[test]
fn the_postgres_setup_points_the_gateway_at_the_healthy_postgres_service() {
    let compose = merged(&[BASE, POSTGRES]);
    let config = gateway_config(&compose);
    let url: &str = &config.gateway.database_url;
    let rest = url.strip_prefix("postgres://").expect("a postgres:// URL");
    let (credentials, location) = rest.split_once('@').unwrap();
    let (user, password) = credentials.split_once(':').unwrap();
    let (host_port, database) = location.split_once('/').unwrap();
    let host = host_port.split(':').next().unwrap();
    let postgres = service(&compose, host).expect("the URL names a compose service");
    let env = |key: &str| {
        postgres
            .get("environment")
            .and_then(|e| e.get(key))
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("postgres {key}"))
    };
    assert_eq!(
        (user, password, database),
        (
            env("POSTGRES_USER"),
            env("POSTGRES_PASSWORD"),
            env("POSTGRES_DB")
        )
    );
    assert!(
        postgres.get("healthcheck").is_some(),
        "postgres has a healthcheck"
    );
    let condition = service(&compose, "switchboard")
        .and_then(|s| s.get("depends_on"))
        .and_then(|d| d.get(host))
        .and_then(|p| p.get("condition"))
        .and_then(Value::as_str);
    assert_eq!(condition, Some("service_healthy"));
}
