-- Workspace checkpoints for /rewind: one row per checkpoint, taken before a tool call that
-- may change the conversation's workspace. The file contents live under
-- data_dir/checkpoints/<conversation>/blobs, named by their SHA-256; the manifest here maps
-- each path to its size, times and content hash, so any kept checkpoint can be rebuilt.
CREATE TABLE checkpoints (
    conversation_key TEXT NOT NULL,    -- ConversationKey display form
    number           BIGINT NOT NULL,  -- per conversation; N = the state after N changing calls
    created_at       BIGINT NOT NULL,  -- Unix ms
    tool             TEXT NOT NULL,    -- the call that followed the checkpoint
    summary          TEXT NOT NULL,    -- a short, scrubbed view of its arguments
    call_id          TEXT NOT NULL,    -- its id: the history is cut before the message with it
    after_message    BIGINT NOT NULL,  -- newest stored message id when taken (0: none)
    manifest         TEXT NOT NULL,    -- JSON: path -> size, times, mode, content hash
    PRIMARY KEY (conversation_key, number)
);
