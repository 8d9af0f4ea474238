"""`mcp doctor`: whether this installation works here, and what to do where it does not.

Each check looks at one thing a new user trips on and returns a `Check`: `ok`,
`note` (worth knowing, nothing broken) or `problem` (something will not work; the
command exits 1), with a one-line fix for a problem. The checks read the
environment (`PATH`, `SHELL`, `MANPATH`, proxy variables...) and files; they never
start a server or the session daemon, and write nothing but one test entry in the
keyring, removed at once (that is how a keyring shows it is usable: a locked one
answers a read and then hangs on a write).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpcli import __version__
from mcpcli.errors import McpCliError

__all__ = ["COMMON_COMMANDS", "NOTE", "OK", "PROBLEM", "Check", "Install", "problems", "run_checks"]

OK, NOTE, PROBLEM = "ok", "note", "problem"
#: Commands that common servers are run with (`npx -y @scope/server`, `uvx server`).
COMMON_COMMANDS = ("node", "npx", "uvx")
#: What installs each of them.
_INSTALLS = {"node": "install Node.js", "npx": "install Node.js (npx comes with it)",
             "uvx": "install uv (https://docs.astral.sh/uv/)"}
_PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY")
#: The keyring entry a usability check writes and removes at once.
_KEYRING_TEST_KEY = "doctor-check"


@dataclass(frozen=True)
class Check:
    """One finding: `status` is ok, note or problem; `fix` says what to do about a problem."""

    name: str
    status: str
    summary: str
    fix: str | None = None
    details: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "status": self.status, "summary": self.summary}
        if self.fix:
            out["fix"] = self.fix
        if self.details:
            out["details"] = list(self.details)
        return out


@dataclass
class Install:
    """Where this mcpcli lives: its command's directory (`bin`) and its data prefix (`share/...`)."""

    scripts: Path
    data: Path
    package: Path = field(default_factory=lambda: Path(__file__).resolve().parent)

    @classmethod
    def current(cls) -> Install:
        """The running installation: the directory of the `mcp` script that runs (a venv's or
        pipx's `bin`, or `~/.local/bin`), else the interpreter's scheme."""
        argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
        if argv0 is not None and argv0.name in ("mcp", "mcpcli") and argv0.parent != Path():
            scripts = argv0.absolute().parent
        else:
            scripts = Path(sysconfig.get_path("scripts"))
        return cls(scripts=scripts, data=scripts.parent if scripts.name == "bin" else Path(sysconfig.get_path("data")))


def run_checks(install: Install | None = None, env: Mapping[str, str] | None = None,
               home: Path | None = None) -> list[Check]:
    """Every check, in the order a person would fix them."""
    install = install or Install.current()
    env = os.environ if env is None else env
    home = home or Path(os.path.expanduser("~"))
    checks: list[Callable[[], Check | list[Check]]] = [
        lambda: _version(install),
        lambda: _command_on_path(install, env),
        lambda: _man_pages(install, env),
        lambda: _completion(install, env, home),
        lambda: _config(),
        _keyring,
        _daemon,
        lambda: _other_clients(home),
        lambda: _commands(env),
        lambda: _proxies(env),
    ]
    out: list[Check] = []
    for check in checks:
        found = check()
        out.extend(found if isinstance(found, list) else [found])
    return out


# -- the installation --------------------------------------------------------------------


def _version(install: Install) -> Check:
    python = ".".join(str(n) for n in sys.version_info[:3])
    return Check("version", OK, f"mcpcli {__version__} (Python {python}) in {install.package}",
                 details=(f"commands: {install.scripts / 'mcp'}, {install.scripts / 'mcpcli'}",))


def _which(name: str, env: Mapping[str, str]) -> str | None:
    return shutil.which(name, path=env.get("PATH", os.defpath))


def _script_kind(path: str) -> str:
    """Whose console script `path` is: "mcpcli", "sdk" (the official MCP SDK's `mcp`) or "other"."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except OSError:
        return "other"
    if "mcpcli" in head:
        return "mcpcli"
    if "from mcp.cli" in head or "import mcp.cli" in head:
        return "sdk"
    return "other"


def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _command_on_path(install: Install, env: Mapping[str, str]) -> Check:
    ours = install.scripts / "mcp"
    on_path = f"export PATH={install.scripts}:$PATH"
    found = _which("mcp", env)
    if found is None:
        return Check("PATH", PROBLEM, f"no `mcp` on PATH (this one is {ours})",
                     f"add {install.scripts} to PATH ({on_path}); `man mcp` and shell completion need it too")
    if _same_file(found, ours):
        return Check("PATH", OK, f"`mcp` is {found}")
    kind = _script_kind(found)
    if kind == "sdk":
        return Check("PATH", PROBLEM, f"`mcp` on PATH is the official MCP SDK's command ({found}), not this one",
                     f"run `mcpcli` (the same command), or put {install.scripts} first on PATH ({on_path})")
    what = "another mcpcli installation" if kind == "mcpcli" else "another program"
    return Check("PATH", PROBLEM, f"`mcp` on PATH is {what} ({found}), not this one ({ours})",
                 f"put {install.scripts} first on PATH ({on_path}), or run {ours}")


def _man_pages(install: Install, env: Mapping[str, str]) -> Check:
    page = install.data / "share" / "man" / "man1" / "mcp.1"
    if not page.is_file():
        return Check("man pages", PROBLEM, f"not installed ({page} is missing)",
                     "reinstall mcpcli with pip or pipx (the wheel installs them)")
    man = _which("man", env)
    if man is None:
        return Check("man pages", NOTE, f"installed in {page.parent.parent}, but there is no `man` command",
                     "install man (man-db) to read them")
    try:
        done = subprocess.run([man, "-w", "mcp"], env=dict(env), capture_output=True, text=True,
                              timeout=10, stdin=subprocess.DEVNULL, check=False)
        shown = done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() else None
    except (OSError, subprocess.SubprocessError):
        shown = None
    if shown is not None and _same_file(shown, page):
        return Check("man pages", OK, f"`man mcp` shows {page}")
    fix = (f"add {install.scripts} to PATH (man also looks in ../share/man of each PATH directory), "
           f"or {page.parent.parent} to MANPATH")
    if shown is not None:
        return Check("man pages", PROBLEM, f"`man mcp` shows another page ({shown}), not {page}", fix)
    return Check("man pages", PROBLEM, f"`man mcp` does not find {page}", fix)


def _read(path: Path) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(1024 * 1024)
    except OSError:
        return ""


def _data_dirs(env: Mapping[str, str], home: Path) -> list[Path]:
    """`$XDG_DATA_HOME` and `$XDG_DATA_DIRS`, with their defaults."""
    user = env.get("XDG_DATA_HOME") or str(home / ".local" / "share")
    system = env.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share"
    return [Path(user)] + [Path(d) for d in system.split(":") if d]


def _path_dirs(env: Mapping[str, str]) -> list[Path]:
    return [Path(d) for d in env.get("PATH", "").split(os.pathsep) if d]


def _completion(install: Install, env: Mapping[str, str], home: Path) -> Check:
    """Whether the user's shell ($SHELL) loads our completion: its rc file runs `mcp completion`,
    or the script is where the shell's completion system looks for it."""
    shell = Path(env.get("SHELL") or "").name
    if shell not in ("bash", "zsh", "fish"):
        return Check("completion", NOTE, f"no completion for the shell {shell or '(SHELL unset)'}; "
                     "mcp completes in bash, zsh and fish", "mcp completion bash|zsh|fish prints the script")
    config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    rc_files = {"bash": [home / ".bashrc", home / ".bash_profile", home / ".profile"],
                "zsh": [Path(env.get("ZDOTDIR") or home) / ".zshrc"],
                "fish": [config / "fish" / "config.fish"]}[shell]
    for rc in rc_files:
        text = _read(rc)
        if f"mcp completion {shell}" in text or f"mcpcli completion {shell}" in text:
            return Check("completion", OK, f"{rc} loads `mcp completion {shell}`")
    for where in _completion_files(shell, env, home, config):
        if where.is_file():
            return Check("completion", OK, f"{shell} finds {where}")
    fix = {"bash": "echo 'eval \"$(mcp completion bash)\"' >> ~/.bashrc",
           "zsh": "echo 'eval \"$(mcp completion zsh)\"' >> ~/.zshrc",
           "fish": "mcp completion fish > ~/.config/fish/completions/mcp.fish"}[shell]
    script = install.data / "share" / {"bash": "bash-completion/completions/mcp", "zsh": "zsh/site-functions/_mcp",
                                        "fish": "fish/vendor_completions.d/mcp.fish"}[shell]
    # A note, not a problem: completion is a convenience, and a fresh installation has not
    # set it up yet (`mcp doctor` would otherwise fail for every new user).
    return Check("completion", NOTE, f"{shell} does not load mcp's completion (installed as {script})", fix)


def _completion_files(shell: str, env: Mapping[str, str], home: Path, config: Path) -> list[Path]:
    """Where `shell` finds a completion for `mcp` without being told."""
    data = _data_dirs(env, home)
    if shell == "bash":
        if not any((d / "bash-completion" / "bash_completion").is_file() for d in data) and not Path(
                "/etc/bash_completion").is_file():
            return []  # no bash-completion: only the rc file loads completions
        user = env.get("BASH_COMPLETION_USER_DIR")
        dirs = [Path(user) / "completions"] if user else []
        dirs += [d / "bash-completion" / "completions" for d in data]
        # bash-completion 2.10 and later also look next to each PATH directory.
        dirs += [d.parent / "share" / "bash-completion" / "completions" for d in _path_dirs(env)]
        return [d / "mcp" for d in dirs]
    if shell == "zsh":
        dirs = [Path(d) for d in env.get("FPATH", "").split(":") if d]
        dirs += [d / "zsh" / "site-functions" for d in data[1:]]
        return [d / "_mcp" for d in dirs]
    return [config / "fish" / "completions" / "mcp.fish"] + [
        d / "fish" / "vendor_completions.d" / "mcp.fish" for d in data]


# -- configuration -------------------------------------------------------------------------


def _config() -> Check:
    from mcpcli.config import Config

    config = Config()
    if not config.path.exists():
        return Check("config", OK, f"no servers configured yet ({config.path})")
    try:
        names = config.names()
    except McpCliError as exc:
        return Check("config", PROBLEM, exc.message, exc.hint or f"fix or remove {config.path}")
    return Check("config", OK, f"{len(names)} server(s) in {config.path}")


def _other_clients(home: Path) -> Check:
    from mcpcli import other_clients

    if not other_clients.enabled():
        return Check("other clients", NOTE, "discovery is off (MCP_NO_DISCOVERY)")
    found, problems = other_clients.discover(home=home)
    files: dict[tuple[str, Path], int] = {}
    for item in found:
        files[(item.label, item.path)] = files.get((item.label, item.path), 0) + 1
    details = tuple(f"{label}: {path} ({count} server(s))" for (label, path), count in files.items())
    details += tuple(f"cannot use {p.path}: {p.message}" for p in problems)
    clients = sorted({label for label, _ in files})
    summary = f"servers configured in {', '.join(clients)}" if clients else "no other client's servers found"
    return Check("other clients", NOTE if problems else OK, summary, details=details)


def _commands(env: Mapping[str, str]) -> list[Check]:
    """`node`, `npx`, `uvx`, and the command of every stdio server of our config."""
    from mcpcli.config import Config

    try:
        entries = Config().entries()
    except McpCliError:
        entries = []  # `_config` reports it
    needed: dict[str, list[str]] = {}
    missing_servers: list[tuple[str, str]] = []
    for entry in entries:
        if entry.transport != "stdio" or not entry.command:
            continue
        try:
            command = entry.resolved().command or ""
        except McpCliError:
            continue  # a variable unset here may be set where it runs
        needed.setdefault(Path(command).name, []).append(entry.name)
        if _which(command, env) is None and not (os.sep in command and os.access(command, os.X_OK)):
            missing_servers.append((entry.name, command))
    present = [c for c in COMMON_COMMANDS if _which(c, env) is not None]
    absent = [c for c in COMMON_COMMANDS if c not in present]
    checks: list[Check] = []
    if not absent:
        checks.append(Check("node, npx, uvx", OK, "all on PATH (most published servers run with npx or uvx)"))
    else:
        status = PROBLEM if any(c in needed for c in absent) else NOTE
        fix = "; ".join(_INSTALLS[c] for c in absent if not (c == "npx" and "node" in absent))
        checks.append(Check("node, npx, uvx", status, f"not on PATH: {', '.join(absent)}"
                            + (f" (found: {', '.join(present)})" if present else ""), fix))
    for name, command in missing_servers:
        if Path(command).name in absent:
            continue  # said above
        checks.append(Check(f"server {name!r}", PROBLEM, f"its command {command!r} is not on PATH",
                            f"install {command}, or give its full path in the config"))
    return checks


def _redacted(url: str) -> str:
    """A proxy URL without its password."""
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        userinfo, _, host = rest.partition("@")
        return f"{scheme}://{userinfo.split(':', 1)[0]}:***@{host}"
    return url


def _proxies(env: Mapping[str, str]) -> Check:
    set_ = []
    bad = []
    for name in _PROXY_VARIABLES:
        for variable in (name, name.lower()):
            value = env.get(variable)
            if not value:
                continue
            set_.append(f"{variable}={_redacted(value) if name != 'NO_PROXY' else value}")
            if name != "NO_PROXY":
                scheme, sep, rest = value.partition("://")
                if not sep or scheme.lower() not in ("http", "https", "socks5", "socks5h") or not rest.strip("/"):
                    bad.append(variable)
    if not set_:
        return Check("proxy", OK, "no proxy variables set (direct connections)")
    if bad:
        return Check("proxy", PROBLEM, f"{', '.join(bad)} is not a proxy URL", "write it as http://HOST:PORT",
                     details=tuple(set_))
    return Check("proxy", NOTE, "HTTP requests go through a proxy", details=tuple(set_))


# -- the keyring and the session daemon ------------------------------------------------------


def _keyring() -> Check:
    import secrets

    from mcpcli.auth.keyring_secrets import KeyringSecrets
    from mcpcli.auth.store import TokenStore

    try:
        store = TokenStore()
    except McpCliError as exc:
        return Check("token store", PROBLEM, exc.message, exc.hint)
    if store.mode == "file":
        return Check("token store", OK, f"sign-ins go to a 0600 {store.location()} (MCP_TOKEN_STORE=file)")
    keyring = store.secrets()
    assert isinstance(keyring, KeyringSecrets)
    probe = secrets.token_hex(8)
    try:
        keyring.set(_KEYRING_TEST_KEY, probe)
        try:
            back = keyring.get(_KEYRING_TEST_KEY)
        finally:
            keyring.delete(_KEYRING_TEST_KEY)
    except McpCliError as exc:
        return Check("token store", PROBLEM, exc.message, exc.hint)
    if back != probe:
        return Check("token store", PROBLEM, f"{keyring.location()} did not give back what was stored",
                     "use --token-store file (MCP_TOKEN_STORE=file)")
    return Check("token store", OK, f"{keyring.location()} stores and reads sign-ins")


def _daemon() -> Check:
    from mcpcli import rundir, sessions

    where = rundir.run_dir_path()
    if not os.path.lexists(where):
        return Check("session daemon", OK, f"not running (its directory {where} is made when needed)")
    try:
        rundir.check_private_dir(where)
    except rundir.RunDirError as exc:
        return Check("session daemon", PROBLEM, str(exc), "remove it (or make it yours: chmod 700 it)")
    try:
        sock = sessions.connect_daemon()
        if sock is None:
            return Check("session daemon", OK, f"not running (run directory {where}, 0700)")
        sock.close()
        found = sessions.list_sessions()
    except McpCliError as exc:
        return Check("session daemon", PROBLEM, exc.message, exc.hint)
    names = ", ".join(s.name for s in found)
    return Check("session daemon", OK, f"running in {where} (0700), {len(found)} session(s)"
                 + (f": {names}" if names else ""))


def problems(checks: Iterable[Check]) -> int:
    """How many of `checks` are problems."""
    return sum(1 for c in checks if c.status == PROBLEM)
