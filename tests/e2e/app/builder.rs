//! A test's choices before its gateway starts: which stand-ins, which channel settings,
//! extra config, clock, tools, and whether the first life may be killed.

use std::sync::Arc;

use switchboard::agent::Tool;
use switchboard::clock::Clock;
use switchboard::config::{Config, EnvString};
use switchboard_standins::discord::{self, FakeDiscord};
use switchboard_standins::signal::{self, FakeSignal};
use switchboard_standins::slack::{FAKE_BOT_TOKEN, FAKE_SIGNING_SECRET, FakeSlack};
use switchboard_standins::telegram::{self, FakeTelegram};
use switchboard_standins::whatsapp::{self, FakeGraph};
use switchboard_standins::{FakeChannel, FakeLlm};

use super::TestApp;
use super::config::{Table, quoted, test_config};
use super::life::any_port;
use crate::helpers::WAIT;

/// A change to the parsed config, for settings easier to set on the typed value.
type Edit = Box<dyn FnOnce(&mut Config)>;

/// One platform: its stand-in (started at `start()` unless given) and its channel table.
struct Platform<S> {
    standin: Option<S>,
    table: Option<Table>,
}

impl<S> Default for Platform<S> {
    fn default() -> Self {
        Self {
            standin: None,
            table: None,
        }
    }
}

impl<S> Platform<S> {
    /// The table when the platform was chosen (open unless the test said otherwise).
    fn table(&mut self) -> Option<Table> {
        match (&self.standin, self.table.take()) {
            (_, Some(table)) => Some(table),
            (Some(_), None) => Some(Table::open()),
            (None, None) => None,
        }
    }
}

/// The stand-in in `slot`, started by `start` if the test did not hand one over (a future
/// does nothing until awaited, so an unneeded `start` costs nothing).
async fn started<S>(slot: &mut Option<S>, start: impl Future<Output = S>) -> &S {
    if slot.is_none() {
        *slot = Some(start.await);
    }
    slot.as_ref().expect("started")
}

/// Gathers a test's choices; [`Builder::start`] starts the stand-ins and the gateway.
#[derive(Default)]
pub struct Builder {
    llm: Option<FakeLlm>,
    fake: Option<Arc<FakeChannel>>,
    slack: Platform<FakeSlack>,
    telegram: Platform<FakeTelegram>,
    discord: Platform<FakeDiscord>,
    whatsapp: Platform<FakeGraph>,
    /// More WhatsApp channels on the same stand-in: (name, table).
    more_whatsapp: Vec<(String, Table)>,
    signal: Platform<FakeSignal>,
    /// `[channels.web]` keys, when the web chat is on.
    web: Option<String>,
    extra: String,
    edits: Vec<Edit>,
    database_url: Option<String>,
    clock: Option<Clock>,
    tools: Vec<Arc<dyn Tool>>,
    killable: bool,
}

impl Builder {
    /// Use this LLM stand-in (a fresh one otherwise).
    pub fn llm(mut self, llm: FakeLlm) -> Self {
        self.llm = Some(llm);
        self
    }

    /// Use this in-process channel (a fresh one named `fake` otherwise).
    pub fn fake(mut self, channel: Arc<FakeChannel>) -> Self {
        self.fake = Some(channel);
        self
    }

    /// A Slack channel named `slack` with `table`'s settings.
    pub fn slack(mut self, table: Table) -> Self {
        self.slack.table = Some(table);
        self
    }

    /// Talk to this Slack stand-in (one a test set up before the gateway starts).
    pub fn slack_standin(mut self, slack: FakeSlack) -> Self {
        self.slack.standin = Some(slack);
        self
    }

    /// A Telegram channel named `telegram` with `table`'s settings.
    pub fn telegram(mut self, table: Table) -> Self {
        self.telegram.table = Some(table);
        self
    }

    /// Talk to this Telegram stand-in.
    pub fn telegram_standin(mut self, telegram: FakeTelegram) -> Self {
        self.telegram.standin = Some(telegram);
        self
    }

    /// A Signal channel named `signal` with `table`'s settings, on a signal-cli stand-in.
    pub fn signal(mut self, table: Table) -> Self {
        self.signal.table = Some(table);
        self
    }

    /// Talk to this signal-cli stand-in.
    pub fn signal_standin(mut self, signal: FakeSignal) -> Self {
        self.signal.standin = Some(signal);
        self
    }

    /// A Discord channel named `discord` with `table`'s settings; `start()` returns once the
    /// client's gateway session is up.
    pub fn discord(mut self, table: Table) -> Self {
        self.discord.table = Some(table);
        self
    }

    /// A WhatsApp channel named `whatsapp` with `table`'s settings (WhatsApp has no groups:
    /// `group_policy` is left out).
    pub fn whatsapp(mut self, table: Table) -> Self {
        self.whatsapp.table = Some(table);
        self
    }

    /// Another WhatsApp channel named `name` on the same stand-in (its table sets its own
    /// `phone_number_id`, and `webhook_path` to share one).
    pub fn whatsapp_also(mut self, name: &str, table: Table) -> Self {
        self.more_whatsapp.push((name.to_owned(), table));
        self
    }

    /// The web chat, named `web`, with extra `[channels.web]` lines `keys`.
    pub fn web(mut self, keys: &str) -> Self {
        self.web = Some(keys.to_owned());
        self
    }

    /// Append TOML sections to the config.
    pub fn config(mut self, extra: &str) -> Self {
        self.extra.push_str(extra);
        self
    }

    /// Change the parsed config before the gateway starts.
    pub fn edit(mut self, edit: impl FnOnce(&mut Config) + 'static) -> Self {
        self.edits.push(Box::new(edit));
        self
    }

    /// Use this database (a PostgreSQL URL) instead of a SQLite file in the test's directory.
    pub fn database(mut self, url: &str) -> Self {
        self.database_url = Some(url.to_owned());
        self
    }

    /// Read time from `clock` (a manual clock lets a test expire leases without waiting).
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Offer `tool` to the agent, in every life.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Run the first life on a runtime of its own, so the test can [`TestApp::kill`] it.
    pub fn killable(mut self) -> Self {
        self.killable = true;
        self
    }

    /// The `[channels.*]` tables for the chosen platforms, their stand-ins started.
    async fn tables(&mut self) -> String {
        let mut text = String::new();
        if let Some(table) = self.slack.table() {
            let slack = started(&mut self.slack.standin, FakeSlack::start()).await;
            let fixed = [
                ("bot_token", quoted(FAKE_BOT_TOKEN)),
                ("signing_secret", quoted(FAKE_SIGNING_SECRET)),
                ("api_url", quoted(&slack.api_url())),
            ];
            text.push_str(&table.render("slack", "slack", &fixed));
        }
        if let Some(table) = self.telegram.table() {
            let tg = started(&mut self.telegram.standin, FakeTelegram::start()).await;
            let fixed = [
                ("token", quoted(telegram::FAKE_BOT_TOKEN)),
                ("api_url", quoted(&tg.api_url())),
                ("poll_timeout_secs", "1".to_owned()),
            ];
            text.push_str(&table.render("telegram", "telegram", &fixed));
        }
        if let Some(table) = self.discord.table() {
            let dc = started(&mut self.discord.standin, FakeDiscord::start()).await;
            let fixed = [
                ("token", quoted(discord::FAKE_TOKEN)),
                ("api_url", quoted(&dc.api_url())),
            ];
            text.push_str(&table.render("discord", "discord", &fixed));
        }
        if let Some(table) = self.whatsapp.table() {
            let graph = started(&mut self.whatsapp.standin, FakeGraph::start()).await;
            let fixed = [
                ("phone_number_id", quoted(whatsapp::FAKE_PHONE_NUMBER_ID)),
                ("access_token", quoted(whatsapp::FAKE_ACCESS_TOKEN)),
                ("app_secret", quoted(whatsapp::FAKE_APP_SECRET)),
                ("verify_token", quoted(whatsapp::FAKE_VERIFY_TOKEN)),
                ("api_url", quoted(&graph.api_url())),
            ];
            let table = table.without("group_policy");
            text.push_str(&table.render("whatsapp", "whatsapp", &fixed));
            for (name, table) in std::mem::take(&mut self.more_whatsapp) {
                let table = table.without("group_policy");
                text.push_str(&table.render(&name, "whatsapp", &fixed));
            }
        }
        if let Some(table) = self.signal.table() {
            let daemon = started(&mut self.signal.standin, FakeSignal::start()).await;
            let fixed = [
                ("account", quoted(signal::FAKE_ACCOUNT)),
                ("daemon_url", quoted(&daemon.daemon_url())),
            ];
            text.push_str(&table.render("signal", "signal", &fixed));
        }
        if let Some(keys) = &self.web {
            text.push_str(&format!("[channels.web]\nkind = \"web\"\n{keys}\n"));
        }
        text
    }

    /// Start the stand-ins not given, write the config and start the gateway.
    pub async fn start(mut self) -> TestApp {
        let llm = match self.llm.take() {
            Some(llm) => llm,
            None => FakeLlm::start().await,
        };
        let dir = tempfile::tempdir().unwrap();
        let tables = self.tables().await;
        let extra = format!("{}\n{tables}", self.extra);
        let mut config = test_config(&llm.openai_url(), dir.path(), &extra);
        if let Some(url) = &self.database_url {
            config.gateway.database_url = EnvString(url.clone());
        }
        for edit in self.edits {
            edit(&mut config);
        }
        let mut app = TestApp {
            gateway: None,
            llm,
            channel: self.fake.unwrap_or_else(|| FakeChannel::new("fake")),
            config,
            clock: self.clock.unwrap_or_else(Clock::wall),
            slack: self.slack.standin,
            telegram: self.telegram.standin,
            discord: self.discord.standin,
            whatsapp: self.whatsapp.standin,
            signal: self.signal.standin,
            tools: self.tools,
            addr: any_port(),
            built: Vec::new(),
            killable: None,
            dir,
        };
        if self.killable {
            app.start_killable().await;
        } else {
            app.start().await;
        }
        if let Some(discord) = &app.discord {
            discord.wait_for_session(WAIT).await;
        }
        app
    }
}
