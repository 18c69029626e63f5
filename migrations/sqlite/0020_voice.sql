-- Speech out. A conversation's own voice rule, set with `/voice on|off` (absent: its agent
-- profile's rule), kept across restarts and seen by every replica; and the characters each
-- scope had spoken per day, counted with the turn's other usage for /usage and the dashboard.
CREATE TABLE conversation_voice (
    conversation_key TEXT PRIMARY KEY,  -- ConversationKey display form: channel:chat[:thread]
    rule             TEXT NOT NULL,     -- "off", "when_spoken_to" or "always"
    updated_at       BIGINT NOT NULL    -- Unix ms
);
ALTER TABLE budget_usage ADD COLUMN spoken_chars BIGINT NOT NULL DEFAULT 0;
