--
-- PostgreSQL database dump
--

\restrict qke5QYmz2aaPDXID8zZoDZY2aNvr8Z2R5WZG0bT5FK9CNdlICIzwRUPsbtWqrCT

-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: _sqlx_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public._sqlx_migrations (
    version bigint NOT NULL,
    description text NOT NULL,
    installed_on timestamp with time zone DEFAULT now() NOT NULL,
    success boolean NOT NULL,
    checksum bytea NOT NULL,
    execution_time bigint NOT NULL
);


--
-- Name: access_grants; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.access_grants (
    channel text NOT NULL,
    user_id text NOT NULL,
    role text NOT NULL,
    user_name text,
    granted_at bigint NOT NULL
);


--
-- Name: allow_rules; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.allow_rules (
    conversation_key text NOT NULL,
    rule text NOT NULL,
    created_by text,
    created_at bigint NOT NULL
);


--
-- Name: approvals; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.approvals (
    id text NOT NULL,
    conversation_key text NOT NULL,
    tool text NOT NULL,
    args text NOT NULL,
    rule text NOT NULL,
    reason text NOT NULL,
    requester text NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    decided_by text,
    prompt_ref text,
    state text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    decided_at bigint
);


--
-- Name: audit; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.audit (
    id bigint NOT NULL,
    conversation_key text NOT NULL,
    inbox_id bigint,
    tool text NOT NULL,
    call_id text NOT NULL,
    args text NOT NULL,
    decision text NOT NULL,
    decided_by text,
    status text NOT NULL,
    duration_ms bigint NOT NULL,
    output text NOT NULL,
    created_at bigint NOT NULL
);


--
-- Name: audit_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.audit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: audit_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.audit_id_seq OWNED BY public.audit.id;


--
-- Name: budget_usage; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.budget_usage (
    scope text NOT NULL,
    day bigint NOT NULL,
    tokens bigint NOT NULL,
    tool_runs bigint NOT NULL
);


--
-- Name: checkpoints; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.checkpoints (
    conversation_key text NOT NULL,
    number bigint NOT NULL,
    created_at bigint NOT NULL,
    tool text NOT NULL,
    summary text NOT NULL,
    call_id text NOT NULL,
    after_message bigint NOT NULL,
    manifest text NOT NULL
);


--
-- Name: conversation_leases; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.conversation_leases (
    key text NOT NULL,
    owner text NOT NULL,
    epoch bigint NOT NULL,
    lease_until bigint NOT NULL
);


--
-- Name: conversation_models; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.conversation_models (
    conversation_key text NOT NULL,
    profile text NOT NULL,
    model text NOT NULL,
    updated_at bigint NOT NULL
);


--
-- Name: conversation_seq; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.conversation_seq (
    key text NOT NULL,
    last_seq bigint NOT NULL
);


--
-- Name: conversation_zones; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.conversation_zones (
    conversation_key text NOT NULL,
    zone text NOT NULL,
    updated_at bigint NOT NULL
);


--
-- Name: conversations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.conversations (
    key text NOT NULL,
    channel text NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
);


--
-- Name: inbox; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.inbox (
    id bigint NOT NULL,
    channel text NOT NULL,
    event_id text NOT NULL,
    conversation_key text NOT NULL,
    payload text NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    owner text,
    lease_until bigint,
    attempts bigint DEFAULT 0 NOT NULL,
    draft_refs text,
    error text,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    kind text DEFAULT 'message'::text NOT NULL,
    seq bigint
);


--
-- Name: inbox_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.inbox_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: inbox_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.inbox_id_seq OWNED BY public.inbox.id;


--
-- Name: instances; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.instances (
    instance_id text NOT NULL,
    started_at bigint NOT NULL,
    heartbeat_at bigint NOT NULL,
    draining bigint DEFAULT 0 NOT NULL
);


--
-- Name: leaders; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.leaders (
    role text NOT NULL,
    holder text NOT NULL,
    term bigint NOT NULL,
    lease_until timestamp with time zone NOT NULL,
    cursor bigint
);


--
-- Name: memories; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.memories (
    id bigint NOT NULL,
    scope text NOT NULL,
    key text NOT NULL,
    content text NOT NULL,
    category text NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    search tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, ((key || ' '::text) || content))) STORED
);


--
-- Name: memories_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.memories_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: memories_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.memories_id_seq OWNED BY public.memories.id;


--
-- Name: messages; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.messages (
    id bigint NOT NULL,
    conversation_key text NOT NULL,
    role text NOT NULL,
    content text NOT NULL,
    tool_calls text,
    tool_call_id text,
    inbox_id bigint,
    created_at bigint NOT NULL
);


--
-- Name: messages_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.messages_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: messages_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.messages_id_seq OWNED BY public.messages.id;


--
-- Name: pairing_requests; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.pairing_requests (
    channel text NOT NULL,
    user_id text NOT NULL,
    user_name text,
    code text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL
);


--
-- Name: schedules; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schedules (
    id bigint NOT NULL,
    conversation_key text NOT NULL,
    source text NOT NULL,
    name text,
    requester text NOT NULL,
    place text NOT NULL,
    prompt text NOT NULL,
    at_ms bigint,
    cron text,
    zone text NOT NULL,
    next_fire_at bigint,
    status text DEFAULT 'active'::text NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
);


--
-- Name: schedules_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.schedules_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: schedules_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.schedules_id_seq OWNED BY public.schedules.id;


--
-- Name: audit id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit ALTER COLUMN id SET DEFAULT nextval('public.audit_id_seq'::regclass);


--
-- Name: inbox id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inbox ALTER COLUMN id SET DEFAULT nextval('public.inbox_id_seq'::regclass);


--
-- Name: memories id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.memories ALTER COLUMN id SET DEFAULT nextval('public.memories_id_seq'::regclass);


--
-- Name: messages id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages ALTER COLUMN id SET DEFAULT nextval('public.messages_id_seq'::regclass);


--
-- Name: schedules id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schedules ALTER COLUMN id SET DEFAULT nextval('public.schedules_id_seq'::regclass);


--
-- Data for Name: _sqlx_migrations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public._sqlx_migrations VALUES (1, 'spine', '2026-12-07 10:49:14.163969+00', true, '\x5010fc28e6d669ae5e5593ddcde044b05a6b1511be740937c2048167dd2e4230c73bf3e5a12f5784b02a6d3b0e72ac6c', 11199450);
INSERT INTO public._sqlx_migrations VALUES (2, 'audit', '2026-12-07 10:49:14.175926+00', true, '\xe4ea9e51816785ad1ae13864fed6e261037a15fdbbe86554455fa13b3a22f1d3520f0ce34e09cdec3782d21570e3501f', 2502833);
INSERT INTO public._sqlx_migrations VALUES (3, 'approvals', '2026-12-07 10:49:14.178768+00', true, '\x7a9f40ab05857cfe83da64284e33eacbcd3f25d8e9e56c6238f273d4c602cbb38f67654409aaba4e6dbfe641678f2e12', 4055315);
INSERT INTO public._sqlx_migrations VALUES (4, 'memory', '2026-12-07 10:49:14.183152+00', true, '\x7ddfb8caf932036a561f79d9e7ad7c4df4c85d4e55a66753bbbec47672d7e5a52f8dd74dcd5eaabd5b354faeb74a252b', 3133428);
INSERT INTO public._sqlx_migrations VALUES (5, 'access', '2026-12-07 10:49:14.186618+00', true, '\xa18472673b2d117cb95facf7ace414207cc0f7db01f0f6626010b1bd635572eb4a762209b81bd05c6aa47737d6b537eb', 3588876);
INSERT INTO public._sqlx_migrations VALUES (8, 'budgets', '2026-12-07 10:49:14.190554+00', true, '\x7e14edab19c0024d4f90a07a9bed76b563e25fb8517447d57f38952c7d3b31ef1720f3065fa2d160401e48b33943a3aa', 2090675);
INSERT INTO public._sqlx_migrations VALUES (9, 'schedules', '2026-12-07 10:49:14.193117+00', true, '\xed344eb2e0d4dcb595ff828c8af70557e5eba5b36b5d32400a258a8682130be0ac3d9e76b3d868f18d8dc9fd1c518fc9', 4920268);
INSERT INTO public._sqlx_migrations VALUES (10, 'cluster', '2026-12-07 10:49:14.198353+00', true, '\x4367da1e2b6d2b7f7881f3374189d337df7fe07c2de3efa0b14e7ff7ed4b9bd64ff9d5df04155f4af017e573e60c95fc', 5143825);
INSERT INTO public._sqlx_migrations VALUES (11, 'leaders', '2026-12-07 10:49:14.203831+00', true, '\x543f8c818d0923167e9b44145f4e52d7c2ac28e65a39582c454df4d75b6c206987e13e4c6d0a2d49d66fdbaf0c0e9b9e', 2510150);
INSERT INTO public._sqlx_migrations VALUES (12, 'checkpoints', '2026-12-07 10:49:14.206686+00', true, '\x623469eab722c53c85aa48323c36e845ff4849e6d29c7d553a167359a008259597934ab1c88dff143b3513abcd74cfc4', 2000114);
INSERT INTO public._sqlx_migrations VALUES (14, 'profiles', '2026-12-07 10:49:14.208957+00', true, '\x9309ec963e0f1c26f0099040fdb7b6d7bf7c395047fa3d6985d6f29df7b8281f22b3f8b21b36f6b03770b8c6ac04ff45', 1886783);


--
-- Data for Name: access_grants; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.access_grants VALUES ('fake', 'dave', 'approver', 'Dave', 1793491200000);


--
-- Data for Name: allow_rules; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: approvals; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.approvals VALUES ('43aaf96108', 'fake:approval', 'shell', 'touch approved.txt', 'shell(touch approved.txt)', 'mode guarded: `touch approved.txt` is not read-only', 'alice', 'pending', NULL, '3', '{"user":{"role":"user","content":"make a file"},"suspension":{"messages":[{"role":"system","content":"You are Switchboard, a helpful assistant reached through a chat app. Answer concisely in Markdown. Use tools when they help and say what you did. Never reveal credentials."},{"role":"user","content":"make a file"},{"role":"assistant","content":"","tool_calls":[{"id":"call_0_shell","name":"shell","args":{"command":"touch approved.txt"}}]}],"turn":[{"role":"assistant","content":"","tool_calls":[{"id":"call_0_shell","name":"shell","args":{"command":"touch approved.txt"}}]}],"pending":{"id":"call_0_shell","name":"shell","args":{"command":"touch approved.txt"}},"decision":{"verdict":"ask","rule":null,"reason":"mode guarded: `touch approved.txt` is not read-only","decided_by":"policy"},"remaining":[],"iterations":1,"tool_calls":0}}', 1793491200000, 1793491500000, NULL);


--
-- Data for Name: audit; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.audit VALUES (1, 'fake:keeper', 2, 'schedule', 'call_0_schedule', '{"action":"create","at":"2026-11-01T02:00:00+00:00","prompt":"Water the plants"}', 'allow (policy): mode guarded: `schedule` is read-only', NULL, 'ok', 4, 'Scheduled #1 once at 2026-11-01 02:00 UTC — Water the plants', 1793491200000);
INSERT INTO public.audit VALUES (2, 'fake:keeper', 2, 'memory_store', 'call_0_memory_store', '{"content":"The dog is called Rex.","key":"dog"}', 'allow (policy): mode guarded: `memory_store` is read-only', NULL, 'ok', 4, 'remembered "dog"', 1793491200000);
INSERT INTO public.audit VALUES (3, 'fake:keeper', 2, 'file_write', 'call_0_file_write', '{"content":"first version\n","path":"notes.txt"}', 'allow (policy): allow rule file_write', NULL, 'ok', 7, 'wrote 14 bytes', 1793491200000);


--
-- Data for Name: budget_usage; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.budget_usage VALUES ('conversation:telegram:4242', 20758, 15, 0);
INSERT INTO public.budget_usage VALUES ('user:telegram:4242', 20758, 15, 0);
INSERT INTO public.budget_usage VALUES ('conversation:fake:keeper', 20758, 60, 3);
INSERT INTO public.budget_usage VALUES ('user:fake:carol', 20758, 60, 3);
INSERT INTO public.budget_usage VALUES ('conversation:fake:approval', 20758, 15, 0);
INSERT INTO public.budget_usage VALUES ('user:fake:alice', 20758, 15, 0);


--
-- Data for Name: checkpoints; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.checkpoints VALUES ('fake:keeper', 0, 1793491200000, 'file_write', 'notes.txt', 'call_0_file_write', 0, '{"taken_at_ns":1796640555355347905,"files":{},"dirs":[],"skipped":{}}');


--
-- Data for Name: conversation_leases; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.conversation_leases VALUES ('telegram:4242', 'vm-c384e006', 1, 1796640555301);
INSERT INTO public.conversation_leases VALUES ('fake:keeper', 'vm-c384e006', 1, 1796640555370);
INSERT INTO public.conversation_leases VALUES ('fake:half', 'vm-ac1e0c51', 1, 1796640570534);
INSERT INTO public.conversation_leases VALUES ('fake:approval', 'vm-ac1e0c51', 54, 1796640555730);


--
-- Data for Name: conversation_models; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: conversation_seq; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.conversation_seq VALUES ('telegram:4242', 1);
INSERT INTO public.conversation_seq VALUES ('fake:keeper', 1);
INSERT INTO public.conversation_seq VALUES ('fake:approval', 2);
INSERT INTO public.conversation_seq VALUES ('fake:half', 1);


--
-- Data for Name: conversation_zones; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: conversations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.conversations VALUES ('telegram:4242', 'telegram', 1793491200000, 1793491200000);
INSERT INTO public.conversations VALUES ('fake:keeper', 'fake', 1793491200000, 1793491200000);


--
-- Data for Name: inbox; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.inbox VALUES (1, 'telegram', 'u10001', 'telegram:4242', '{"type":"message","key":{"channel":"telegram","chat":"4242","thread":null},"event_id":"u10001","user":{"id":"4242","name":"@tg_user"},"text":"hello","place":{"kind":"direct"}}', 'done', NULL, NULL, 1, '["3"]', NULL, 1793491200000, 1793491200000, 'message', 1);
INSERT INTO public.inbox VALUES (2, 'fake', 'fake-1', 'fake:keeper', '{"type":"message","key":{"channel":"fake","chat":"keeper","thread":null},"event_id":"fake-1","user":{"id":"carol","name":null},"text":"keep these","place":{"kind":"direct"}}', 'done', NULL, NULL, 1, '["1"]', NULL, 1793491200000, 1793491200000, 'message', 1);
INSERT INTO public.inbox VALUES (3, 'fake', 'fake-2', 'fake:approval', '{"type":"message","key":{"channel":"fake","chat":"approval","thread":null},"event_id":"fake-2","user":{"id":"alice","name":null},"text":"make a file","place":{"kind":"direct"}}', 'done', NULL, NULL, 1, '["2"]', NULL, 1793491200000, 1793491200000, 'message', 1);
INSERT INTO public.inbox VALUES (4, 'fake', 'fake-3', 'fake:approval', '{"type":"message","key":{"channel":"fake","chat":"approval","thread":null},"event_id":"fake-3","user":{"id":"alice","name":null},"text":"and after that?","place":{"kind":"direct"}}', 'pending', NULL, NULL, 0, NULL, NULL, 1793491200000, 1793491200000, 'message', 2);
INSERT INTO public.inbox VALUES (5, 'fake', 'fake-4', 'fake:half', '{"type":"message","key":{"channel":"fake","chat":"half","thread":null},"event_id":"fake-4","user":{"id":"bob","name":null},"text":"tell me a long story","place":{"kind":"direct"}}', 'processing', 'vm-ac1e0c51', 1793491800000, 1, '["4"]', NULL, 1793491200000, 1793491200000, 'message', 1);


--
-- Data for Name: instances; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.instances VALUES ('vm-ac1e0c51', 1796640555439, 1796640555439, 0);


--
-- Data for Name: leaders; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.leaders VALUES ('telegram:telegram', 'vm-ac1e0c51', 2, '2026-12-07 10:49:30.439133+00', 10002);


--
-- Data for Name: memories; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.memories VALUES (1, 'conv:fake:keeper', 'dog', 'The dog is called Rex.', 'core', 1793491200000, 1793491200000, DEFAULT);


--
-- Data for Name: messages; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.messages VALUES (1, 'telegram:4242', 'user', 'hello', NULL, NULL, 1, 1793491200000);
INSERT INTO public.messages VALUES (2, 'telegram:4242', 'assistant', 'Hello from Telegram.', NULL, NULL, 1, 1793491200000);
INSERT INTO public.messages VALUES (3, 'fake:keeper', 'user', 'keep these', NULL, NULL, 2, 1793491200000);
INSERT INTO public.messages VALUES (4, 'fake:keeper', 'assistant', '', '[{"id":"call_0_schedule","name":"schedule","args":{"action":"create","at":"2026-11-01T02:00:00+00:00","prompt":"Water the plants"}}]', NULL, 2, 1793491200000);
INSERT INTO public.messages VALUES (5, 'fake:keeper', 'tool', 'Scheduled #1 once at 2026-11-01 02:00 UTC — Water the plants', NULL, 'call_0_schedule', 2, 1793491200000);
INSERT INTO public.messages VALUES (6, 'fake:keeper', 'assistant', '', '[{"id":"call_0_memory_store","name":"memory_store","args":{"content":"The dog is called Rex.","key":"dog"}}]', NULL, 2, 1793491200000);
INSERT INTO public.messages VALUES (7, 'fake:keeper', 'tool', 'remembered "dog"', NULL, 'call_0_memory_store', 2, 1793491200000);
INSERT INTO public.messages VALUES (8, 'fake:keeper', 'assistant', '', '[{"id":"call_0_file_write","name":"file_write","args":{"content":"first version\n","path":"notes.txt"}}]', NULL, 2, 1793491200000);
INSERT INTO public.messages VALUES (9, 'fake:keeper', 'tool', 'wrote 14 bytes', NULL, 'call_0_file_write', 2, 1793491200000);
INSERT INTO public.messages VALUES (10, 'fake:keeper', 'assistant', 'Kept.', NULL, NULL, 2, 1793491200000);


--
-- Data for Name: pairing_requests; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: schedules; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.schedules VALUES (1, 'fake:keeper', 'chat', NULL, 'carol', '{"kind":"direct"}', 'Water the plants', 1793498400000, NULL, 'UTC', 1793498400000, 'active', 1793491200000, 1793491200000);


--
-- Name: audit_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.audit_id_seq', 3, true);


--
-- Name: inbox_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.inbox_id_seq', 5, true);


--
-- Name: memories_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.memories_id_seq', 1, true);


--
-- Name: messages_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.messages_id_seq', 10, true);


--
-- Name: schedules_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.schedules_id_seq', 1, true);


--
-- Name: _sqlx_migrations _sqlx_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public._sqlx_migrations
    ADD CONSTRAINT _sqlx_migrations_pkey PRIMARY KEY (version);


--
-- Name: access_grants access_grants_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.access_grants
    ADD CONSTRAINT access_grants_pkey PRIMARY KEY (channel, user_id, role);


--
-- Name: allow_rules allow_rules_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.allow_rules
    ADD CONSTRAINT allow_rules_pkey PRIMARY KEY (conversation_key, rule);


--
-- Name: approvals approvals_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.approvals
    ADD CONSTRAINT approvals_pkey PRIMARY KEY (id);


--
-- Name: audit audit_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit
    ADD CONSTRAINT audit_pkey PRIMARY KEY (id);


--
-- Name: budget_usage budget_usage_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.budget_usage
    ADD CONSTRAINT budget_usage_pkey PRIMARY KEY (scope, day);


--
-- Name: checkpoints checkpoints_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.checkpoints
    ADD CONSTRAINT checkpoints_pkey PRIMARY KEY (conversation_key, number);


--
-- Name: conversation_leases conversation_leases_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversation_leases
    ADD CONSTRAINT conversation_leases_pkey PRIMARY KEY (key);


--
-- Name: conversation_models conversation_models_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversation_models
    ADD CONSTRAINT conversation_models_pkey PRIMARY KEY (conversation_key);


--
-- Name: conversation_seq conversation_seq_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversation_seq
    ADD CONSTRAINT conversation_seq_pkey PRIMARY KEY (key);


--
-- Name: conversation_zones conversation_zones_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversation_zones
    ADD CONSTRAINT conversation_zones_pkey PRIMARY KEY (conversation_key);


--
-- Name: conversations conversations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversations
    ADD CONSTRAINT conversations_pkey PRIMARY KEY (key);


--
-- Name: inbox inbox_channel_event_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inbox
    ADD CONSTRAINT inbox_channel_event_id_key UNIQUE (channel, event_id);


--
-- Name: inbox inbox_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inbox
    ADD CONSTRAINT inbox_pkey PRIMARY KEY (id);


--
-- Name: instances instances_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.instances
    ADD CONSTRAINT instances_pkey PRIMARY KEY (instance_id);


--
-- Name: leaders leaders_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.leaders
    ADD CONSTRAINT leaders_pkey PRIMARY KEY (role);


--
-- Name: memories memories_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.memories
    ADD CONSTRAINT memories_pkey PRIMARY KEY (id);


--
-- Name: memories memories_scope_key_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.memories
    ADD CONSTRAINT memories_scope_key_key UNIQUE (scope, key);


--
-- Name: messages messages_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_pkey PRIMARY KEY (id);


--
-- Name: pairing_requests pairing_requests_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.pairing_requests
    ADD CONSTRAINT pairing_requests_pkey PRIMARY KEY (channel, user_id);


--
-- Name: schedules schedules_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schedules
    ADD CONSTRAINT schedules_pkey PRIMARY KEY (id);


--
-- Name: schedules schedules_source_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schedules
    ADD CONSTRAINT schedules_source_name_key UNIQUE (source, name);


--
-- Name: approvals_pending; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX approvals_pending ON public.approvals USING btree (conversation_key) WHERE (status = 'pending'::text);


--
-- Name: audit_by_conversation; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX audit_by_conversation ON public.audit USING btree (conversation_key, id);


--
-- Name: inbox_conversation_seq; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX inbox_conversation_seq ON public.inbox USING btree (conversation_key, seq);


--
-- Name: inbox_unfinished; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX inbox_unfinished ON public.inbox USING btree (conversation_key, id) WHERE (status = ANY (ARRAY['pending'::text, 'processing'::text]));


--
-- Name: memories_search; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX memories_search ON public.memories USING gin (search);


--
-- Name: messages_by_conversation; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_by_conversation ON public.messages USING btree (conversation_key, id);


--
-- Name: pairing_by_code; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX pairing_by_code ON public.pairing_requests USING btree (channel, code);


--
-- Name: schedules_by_conversation; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX schedules_by_conversation ON public.schedules USING btree (conversation_key) WHERE (status = 'active'::text);


--
-- Name: schedules_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX schedules_due ON public.schedules USING btree (next_fire_at) WHERE (status = 'active'::text);


--
-- Name: messages messages_conversation_key_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_conversation_key_fkey FOREIGN KEY (conversation_key) REFERENCES public.conversations(key) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--

\unrestrict qke5QYmz2aaPDXID8zZoDZY2aNvr8Z2R5WZG0bT5FK9CNdlICIzwRUPsbtWqrCT

