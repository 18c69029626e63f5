-- Budgets: what each scope (a conversation, or a user on one channel) used per UTC calendar
-- day, so a daily limit holds across turns, restarts and replicas. One row per scope and
-- day, added to after every turn; old days are kept for /usage and may be pruned freely.
CREATE TABLE budget_usage (
    scope      TEXT NOT NULL,     -- "conversation:<key>" or "user:<channel>:<user id>"
    day        BIGINT NOT NULL,   -- days since 1970-01-01, UTC
    tokens     BIGINT NOT NULL,   -- LLM tokens (the provider's figures, estimated when absent)
    tool_runs  BIGINT NOT NULL,
    PRIMARY KEY (scope, day)
);
