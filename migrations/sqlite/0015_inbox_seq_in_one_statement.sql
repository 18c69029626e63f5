-- Issue #19: on SQLite an inbox insert is one statement. It reads its sequence number from
-- conversation_seq inside the INSERT, and this trigger moves conversation_seq on within the
-- same statement. A redelivery (ON CONFLICT DO NOTHING) inserts no row, fires nothing and
-- uses up no number. SQLite serialises writers, so numbers still follow commit order; the
-- write lock is now held across one hand-off to the connection's thread instead of three.
CREATE TRIGGER inbox_next_seq AFTER INSERT ON inbox
BEGIN
    INSERT OR REPLACE INTO conversation_seq (key, last_seq) VALUES (NEW.conversation_key, NEW.seq);
END;
