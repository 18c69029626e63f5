-- The model a conversation switched to with `/model`, among those its agent profile allows.
-- Kept with the profile it was chosen under: when the config routes the conversation to
-- another profile, the choice no longer applies and that profile's first model is used.
CREATE TABLE conversation_models (
    conversation_key TEXT PRIMARY KEY,  -- ConversationKey display form: channel:chat[:thread]
    profile          TEXT NOT NULL,     -- [agents.<name>] the choice was made under
    model            TEXT NOT NULL,
    updated_at       BIGINT NOT NULL    -- Unix ms
);
