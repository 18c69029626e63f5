//! The memory tools the model can call: `memory_store`, `memory_recall`, `memory_forget`,
//! each bound to the scope of the conversation (or user) that calls it. They touch only the
//! assistant's own memory, so the policy treats them like reads.

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use serde_json::{Value, json};

use switchboard_channel::ConversationKey;

use super::{Recaller, enforce_bound};
use crate::agent::{Tool, ToolResult};
use crate::ids::MemoryScope;
use crate::store::{Memory, Store};

/// Which memory operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Store,
    Recall,
    Forget,
}

/// One memory tool, bound to one scope.
pub struct MemoryTool {
    op: Op,
    place: Arc<Place>,
}

/// What the three tools of one conversation share.
struct Place {
    store: Arc<dyn Store>,
    /// Recall (hybrid when configured); its clock stamps `updated_at` (recall prefers
    /// fresher facts on ties).
    recaller: Recaller,
    scope: MemoryScope,
    /// The conversation, named in the audit when the scope's bound forgets memories.
    key: ConversationKey,
    max_per_scope: usize,
}

/// The three memory tools for `scope`, used in the conversation `key`.
pub fn memory_tools(
    store: &Arc<dyn Store>,
    recaller: &Recaller,
    scope: &MemoryScope,
    key: &ConversationKey,
    max_per_scope: usize,
) -> Vec<Arc<dyn Tool>> {
    let place = Arc::new(Place {
        store: Arc::clone(store),
        recaller: recaller.clone(),
        scope: scope.clone(),
        key: key.clone(),
        max_per_scope,
    });
    [Op::Store, Op::Recall, Op::Forget]
        .into_iter()
        .map(|op| {
            Arc::new(MemoryTool {
                op,
                place: Arc::clone(&place),
            }) as Arc<dyn Tool>
        })
        .collect()
}

#[async_trait]
impl Tool for MemoryTool {
    fn name(&self) -> &str {
        match self.op {
            Op::Store => "memory_store",
            Op::Recall => "memory_recall",
            Op::Forget => "memory_forget",
        }
    }

    fn description(&self) -> &str {
        match self.op {
            Op::Store => {
                "Remember a fact for later conversations under a short key (replaces an earlier fact with the same key)."
            }
            Op::Recall => "Search remembered facts.",
            Op::Forget => "Forget the fact stored under a key.",
        }
    }

    fn parameters_schema(&self) -> Value {
        Value::clone(&self.shared_schema())
    }

    /// One value per tool for the process: every turn's request shares it.
    fn shared_schema(&self) -> Arc<Value> {
        static SCHEMAS: LazyLock<[Arc<Value>; 3]> = LazyLock::new(|| {
            [
                json!({"type": "object", "properties": {"key": {"type": "string", "minLength": 1, "maxLength": 100}, "content": {"type": "string", "minLength": 1, "maxLength": 4000}}, "required": ["key", "content"], "additionalProperties": false}),
                json!({"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 20}}, "required": ["query"], "additionalProperties": false}),
                json!({"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"], "additionalProperties": false}),
            ]
            .map(Arc::new)
        });
        let index = match self.op {
            Op::Store => 0,
            Op::Recall => 1,
            Op::Forget => 2,
        };
        Arc::clone(&SCHEMAS[index])
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn execute(&self, args: Value) -> ToolResult {
        let text = |k: &str| args[k].as_str().unwrap_or_default().to_owned();
        let p = &*self.place;
        let result = match self.op {
            Op::Store => {
                let memory = Memory {
                    scope: p.scope.clone(),
                    key: text("key"),
                    content: text("content"),
                    category: "core".into(),
                    updated_at: p.recaller.clock.now_ms(),
                };
                let stored = p.store.remember(&memory, false).await;
                if stored.is_ok() {
                    if let Some(semantic) = &p.recaller.semantic {
                        semantic.wake();
                    }
                    let clock = &p.recaller.clock;
                    enforce_bound(p.store.as_ref(), &p.scope, p.max_per_scope, &p.key, clock).await;
                }
                stored.map(|_| format!("remembered {:?}", memory.key))
            }
            Op::Recall => {
                let limit = args["limit"].as_u64().unwrap_or(5) as usize;
                p.recaller
                    .recall(&p.scope, &text("query"), limit)
                    .await
                    .map(|found| {
                        if found.is_empty() {
                            "nothing found".to_owned()
                        } else {
                            found
                                .iter()
                                .map(|m| format!("{}: {}", m.key, m.content))
                                .collect::<Vec<_>>()
                                .join("\n")
                        }
                    })
            }
            Op::Forget => p.store.forget(&p.scope, &text("key")).await.map(|existed| {
                if existed {
                    "forgotten".to_owned()
                } else {
                    "there was no such memory".to_owned()
                }
            }),
        };
        result.map_or_else(
            |e| ToolResult::err(format!("memory is unavailable: {e}")),
            ToolResult::ok,
        )
    }
}
