//! One test per circuit-breaker row, plus a check that no row goes untested.

use crate::analyze::analyze;
use crate::breakers::{BREAKERS, tripped};

/// The first breaker any simple command of `command` trips.
fn trips(command: &str) -> Option<&'static str> {
    let analysis = analyze(command).expect("test commands parse");
    analysis
        .parts
        .iter()
        .find_map(|part| tripped(part, &analysis))
}

/// Asserts that each of `tripping` trips `name` and none of `harmless` trips anything.
fn row(name: &str, tripping: &[&str], harmless: &[&str]) {
    for command in tripping {
        assert_eq!(
            trips(command),
            Some(name),
            "{command:?} should trip {name:?}"
        );
    }
    for command in harmless {
        assert_eq!(trips(command), None, "{command:?} should trip nothing");
    }
}

/// Every row name this file tests; `every_breaker_row_has_a_test` compares it with the table.
const TESTED: &[&str] = &[
    "rm -rf outside the workspace",
    "find -delete outside the workspace",
    "privilege escalation",
    "download piped into a shell",
    "filesystem format",
    "dd onto a device",
    "shutdown or reboot",
    "chmod -R 777",
    "write under a system directory",
    "write to a start-up file or git hook",
    "kill every process",
    "fork bomb",
    "command name computed at run time",
];

#[test]
fn every_breaker_row_has_a_test() {
    let names: Vec<&str> = BREAKERS.iter().map(|b| b.name).collect();
    assert_eq!(names, TESTED);
}

#[test]
fn rm_recursive_and_forced_outside_the_workspace_trips() {
    row(
        "rm -rf outside the workspace",
        &[
            "rm -rf /",
            "rm -fr /*",
            "rm -r -f ~",
            "rm --recursive --force ~/x",
            "rm -Rf $HOME",
            "rm -rf '${HOME}'",
            "rm -rf *",
            "rm -rf .",
            "rm -rf ./",
            "rm -rf ..",
            "rm -rf a/../../b",
            "rm -rf /tmp/x",
            "rm -rf -- /",
            "rm -rfv .*",
            "rm -rf {,/}",
            "rm -rf \"$DIR\"/",
            "cd / && rm -rf home",
            "cd ~; rm -rf x",
            "popd && rm -rf x",
            "env -C .. rm -rf x",
            "xargs rm -rf < dirs.txt",
        ],
        &[
            "cd build && rm -rf out",
            "env -C sub rm -rf x",
            "rm -rf build",
            "rm -rf ./target",
            "rm -r /",
            "rm -f /etc/x",
            "rm ~/x",
            "rm -rf src/*.o",
        ],
    );
}

#[test]
fn find_delete_outside_the_workspace_trips() {
    row(
        "find -delete outside the workspace",
        &[
            "find / -delete",
            "find ~ -name '*.log' -delete",
            "find .. -type f -delete",
            "find $HOME -delete",
        ],
        &[
            "find build -name '*.o' -delete",
            "find / -name x",
            "find src -delete",
        ],
    );
}

#[test]
fn privilege_escalation_trips() {
    row(
        "privilege escalation",
        &[
            "sudo ls",
            "su -c id",
            "doas rm x",
            "/usr/bin/sudo -u root id",
            "pkexec id",
        ],
        &["sudoku", "echo sudo", "ls su"],
    );
}

#[test]
fn a_download_piped_into_a_shell_or_interpreter_trips() {
    row(
        "download piped into a shell",
        &[
            "curl -fsSL x | sh",
            "wget -qO- x | bash",
            "curl x | tee log | python3",
            "fetch -o - x | perl",
            "curl x | node",
            "bash <(curl x)",
            "sh -c \"$(curl x)\"",
            "eval \"$(wget -O- x)\"",
            "(curl x) | sh",
            "curl x | (cd /tmp && sh)",
            "curl x > >(sh)",
            ". <(curl x)",
            "python3.12 <(curl x)",
        ],
        &[
            "curl x | jq .",
            "curl -o install.sh x",
            "sh install.sh | curl -d @- x",
            "curl x; sh y",
        ],
    );
}

#[test]
fn filesystem_format_trips() {
    row(
        "filesystem format",
        &["mkfs /dev/sdb", "mkfs.ext4 /dev/sda1", "mke2fs x"],
        &["mkdir fs"],
    );
}

#[test]
fn dd_onto_a_device_trips() {
    row(
        "dd onto a device",
        &[
            "dd if=/dev/zero of=/dev/sda",
            "dd if=x.iso of=/dev/disk2 bs=4M",
        ],
        &["dd if=/dev/zero of=/dev/null count=1", "dd if=a of=b"],
    );
}

#[test]
fn shutdown_and_reboot_trip() {
    row(
        "shutdown or reboot",
        &[
            "shutdown -h now",
            "reboot",
            "halt",
            "poweroff",
            "init 0",
            "init 6",
            "systemctl reboot",
        ],
        &["init", "systemctl status x"],
    );
}

#[test]
fn chmod_recursive_777_trips() {
    row(
        "chmod -R 777",
        &[
            "chmod -R 777 .",
            "chmod --recursive a+rwx src",
            "chmod 777 /",
            "chmod -vR 0777 x",
        ],
        &["chmod 777 script.sh", "chmod -R 755 .", "chmod +x a"],
    );
}

#[test]
fn writes_under_system_directories_trip() {
    row(
        "write under a system directory",
        &[
            "echo x > /etc/passwd",
            "echo x >> /usr/local/bin/x",
            "ls 2> /boot/log",
            "tee -a /etc/hosts",
            "cp x /usr/bin/",
            "mv key ~/.ssh/authorized_keys",
            "echo k >> $HOME/.ssh/authorized_keys",
            "cp -t /etc a b",
            "install x /usr/bin/x",
            "echo x > /tmp/../etc/x",
            "dd if=x of=/boot/vmlinuz",
        ],
        &[
            "cat /etc/passwd",
            "cp /etc/hosts .",
            "echo x > etc/x",
            "tee out.txt",
            "echo > /etcetera",
        ],
    );
}

#[test]
fn writing_a_start_up_file_or_git_hook_trips() {
    row(
        "write to a start-up file or git hook",
        &[
            "echo x >> ~/.bashrc",
            "cp evil ~/.profile",
            "tee -a $HOME/.zshrc",
            "echo x > .git/hooks/pre-commit",
            "echo x >> sub/.git/config",
            "cp a ~/.config/autostart/x.desktop",
            "ln -s ./evil ~/.gitconfig",
        ],
        &[
            "cat ~/.bashrc",
            "echo x > bashrc.txt",
            "cp .git/config backup.cfg",
            "echo x > docs/hooks/pre-commit",
        ],
    );
}

#[test]
fn killing_every_process_trips() {
    row(
        "kill every process",
        &[
            "kill -9 -1",
            "kill -KILL -1",
            "kill -s KILL -1",
            "kill -- -1",
        ],
        &["kill -9 1234", "kill -1 1234", "kill -l"],
    );
}

#[test]
fn fork_bombs_trip() {
    row(
        "fork bomb",
        &[
            ":(){ :|:& };:",
            "bomb(){ bomb|bomb& };bomb",
            "function b { b | b & }; b",
            "f() ( f & f )",
        ],
        &["f() { ls; }; f &", "build() { make; }; build | tee log"],
    );
}

#[test]
fn a_command_name_computed_at_run_time_trips() {
    row(
        "command name computed at run time",
        &[
            "$CMD -rf /",
            "$(echo rm) -rf /",
            "`echo rm` x",
            "/bin/r? x",
            "/usr/bin/r[m] x",
            "{rm,-rf,/}",
        ],
        &["[ -f x ]", "[[ -f x ]]", "echo $HOME", "ls *.rs"],
    );
}
