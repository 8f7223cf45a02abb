# The systemd units of hearth, written once. nix/module.nix feeds them to systemd.services/paths/
# timers; tests/test_nix_units.py evaluates this same file with plain `nix-instantiate` (no
# nixpkgs), renders the unit text and runs `systemd-analyze verify` and `security` on it.
# So this file uses builtins only, and everything host-specific comes in as an argument:
#
#   cfg     the services.hearth settings (see nix/module.nix for their meaning)
#   bin     { hearth = "/path/to/hearth"; hearthLoop = "/path/to/hearth-loop"; }
#   script  name: text: an executable running `text` with /bin/sh semantics (pkgs.writeShellScript)
#   ollamaLocal  whether services.ollama runs on this host (the agent units then start after it)
#
# How the command sandbox coexists with the unit hardening (nix/README.md has the long form):
# the agent unit itself is a mount namespace that shows a run only its own workspace, the audit
# and the queue; tool commands inside it are walled off again by the allow list of
# agent/safety/allowlist.py: under Landlock (sandbox = "landlock", the default) as read and write
# rules, which need no namespaces, so the unit keeps RestrictNamespaces=yes, PrivateUsers and
# every Protect* setting; under bwrap (sandbox = "bwrap", needed for commands' network) as the
# only things mounted, which relaxes exactly what bubblewrap needs (see bwrapRelaxations).
{ cfg, bin, script, ollamaLocal ? false }:
let
  inherit (builtins) attrNames concatStringsSep listToAttrs mapAttrs replaceStrings;
  stateDir = cfg.stateDir;
  configDir = "/etc/hearth";
  # the part of stateDir below /var/lib, for StateDirectory= (the module asserts the prefix)
  stateRel = replaceStrings [ "/var/lib/" ] [ "" ] stateDir;
  shellArg = s: "'" + replaceStrings [ "'" ] [ "'\\''" ] s + "'";
  optional = cond: value: if cond then [ value ] else [ ];
  optionalAttrs = cond: attrs: if cond then attrs else { };

  # Every hearth unit starts from this; each relaxation below says why.
  hardening = {
    User = "hearth";
    Group = "hearth";
    ProtectSystem = "strict";
    ProtectHome = true;
    PrivateTmp = true;
    PrivateDevices = true;
    PrivateIPC = true;
    PrivateUsers = true;
    NoNewPrivileges = true;
    CapabilityBoundingSet = "";
    AmbientCapabilities = "";
    ProtectKernelTunables = true;
    ProtectKernelModules = true;
    ProtectKernelLogs = true;
    ProtectControlGroups = true;
    ProtectClock = true;
    ProtectHostname = true;
    ProtectProc = "invisible";
    ProcSubset = "pid";
    RestrictAddressFamilies = [ "AF_UNIX" ];
    RestrictNamespaces = true;
    RestrictRealtime = true;
    RestrictSUIDSGID = true;
    LockPersonality = true;
    MemoryDenyWriteExecute = true;
    RemoveIPC = true;
    SystemCallArchitectures = "native";
    SystemCallFilter = [ "@system-service" "~@privileged" ];
    SystemCallErrorNumber = "EPERM";
    DevicePolicy = "closed";
    KeyringMode = "private";
    UMask = "0077";
  };

  # Units that never need the network.
  offline = {
    PrivateNetwork = true;
    IPAddressDeny = "any";
  };

  environment = {
    HEARTH_STATE_DIR = stateDir;
    HEARTH_CONFIG_DIR = configDir;
    OLLAMA_HOST = cfg.ollama.url;
    HEARTH_MODEL = cfg.defaultModel;
    HEARTH_MODE = cfg.defaultMode;
    HEARTH_MAX_ITERATIONS = toString cfg.maxIterations;
    HEARTH_SANDBOX = cfg.sandbox;
    HEARTH_TRIPWIRES = cfg.tripwires;
    HEARTH_TRIPWIRE_ACTION = cfg.tripwireAction;
    HEARTH_COMMAND_MAX_PROCS = toString cfg.limits.commandTasksMax;
    HEARTH_COMMAND_MEMORY_MB = toString cfg.limits.commandMemoryMB;
    HEARTH_COMMAND_CPU_S = toString cfg.limits.commandCpuSec;
  } // optionalAttrs (cfg.configRepo != null) { HEARTH_CONFIG_REPO = toString cfg.configRepo; }
    // optionalAttrs (cfg.exposePaths != [ ]) { HEARTH_SANDBOX_EXPOSE = concatStringsSep ":" cfg.exposePaths; }
    # links to the command center in alerts
    // optionalAttrs web.enable { HEARTH_WEB_URL = if (web.publicUrl or null) != null then web.publicUrl else "http://${web.listenAddress}:${toString web.port}"; };

  # The one endpoint every run needs: Ollama, when its URL names a literal address or localhost
  # (IPAddressAllow= takes addresses, not names: another host goes into agentAddressAllow).
  ollamaHost =
    let
      v6 = builtins.match "[a-z]+://\\[([^]]+)].*" cfg.ollama.url;
      plain = builtins.match "[a-z]+://([^/:]+).*" cfg.ollama.url;
    in if v6 != null then builtins.head v6 else if plain != null then builtins.head plain else "";
  ollamaAllow =
    if ollamaHost == "localhost" || builtins.match "127\\.[0-9.]+|::1" ollamaHost != null then [ "localhost" ]
    else if builtins.match "[0-9.]+|[0-9a-fA-F:]+" ollamaHost != null then [ ollamaHost ]
    else [ ];

  # Alerts a refused request raises are sent by the spawner: only then does it get the network
  # and the credentials those destinations' URLs name.
  destinations = builtins.attrValues ((cfg.alerts or { }).destinations or { });
  spawnAlerts = builtins.any (d: builtins.elem "rejected" d.events) destinations;
  urlCredentials = url: map builtins.head (builtins.filter builtins.isList (builtins.split "\\{cred:([A-Za-z][A-Za-z0-9_.-]*)}" url));
  alertCredentials = builtins.filter (n: cfg.credentials ? ${n}) (builtins.concatLists (map (d: urlCredentials d.url) destinations));

  # Landlock's three system calls are in no @group of systemd 252 to 256; the command sandbox
  # (agent/sandbox.py) needs them to wall in each tool command.
  landlockCalls = "landlock_create_ruleset landlock_add_rule landlock_restrict_self";

  # sandbox = "bwrap": what bubblewrap needs from the unit, and nothing more.
  bwrapRelaxations = {
    # bwrap builds the command's sandbox from new user, mount, pid, net, ipc and uts namespaces
    RestrictNamespaces = "user mnt pid net ipc uts cgroup";
    # the kernel lets a user namespace mount a fresh /proc (bwrap --proc) only when the /proc it
    # sees is fully visible: no read-only over-mounts (ProtectKernelTunables/Logs), no hidepid
    ProtectKernelTunables = false;
    ProtectKernelLogs = false;
    ProtectProc = "default";
    ProcSubset = "all";
    # bwrap mounts (mount, pivot_root, umount2) and sets the capabilities of its namespace (capset)
    SystemCallFilter = [ "@system-service" "@mount" "capset" landlockCalls ];
  };

  agentService = {
    description = "hearth run %i (one sandboxed agent run from the queue)";
    after = [ "network.target" ] ++ optional ollamaLocal "ollama.service";
    wants = optional ollamaLocal "ollama.service";
    # the unit's cgroup is hearth's to divide (Delegate= below)
    environment = environment // { HEARTH_CGROUP_DELEGATED = "1"; };
    serviceConfig = hardening // {
      Type = "exec";
      ExecStart = "${bin.hearth} agent %i";
      # systemd creates the run's workspace, owned by hearth, before the namespace is set up
      StateDirectory = "${stateRel}/agents/%i";
      StateDirectoryMode = "0700";
      # writable, each for what the run writes: the audit and the knowledge base (SQLite creates
      # their -wal and -shm beside them, hence the state directory's top level), its live state
      # (state/), its workspace's checkpoint history (checkpoints/, also how a follow-up or a
      # swarm's child gets another run's files: hearth/run/history.py); the queue where its
      # claimed entry is settled (claimed/, failed/, under its lock in locks/) and where a swarm
      # queues its children (new requests the spawner checks like any other), never what the
      # spawner refused (rejected/); nothing else on the host
      ReadWritePaths = [ stateDir ];
      ReadOnlyPaths = [ "-${stateDir}/queue/rejected" ];
      # the network: Ollama, and only what the operator adds (the web tools' and the commands'
      # proxy's destinations); the network guard still refuses private addresses inside that
      IPAddressDeny = "any";
      IPAddressAllow = ollamaAllow ++ cfg.agentAddressAllow;
      # the run's commands get a cgroup of their own below the unit's (agent/safety/cgroups.py):
      # their process and memory caps hold whoever the user; hearth moves itself into
      # <unit>/supervisor and its commands into <unit>/commands
      Delegate = "pids memory cpu";
      # ...which needs the cgroup hierarchy writable below the unit (ProtectControlGroups makes all of
      # it read-only; systemd 256 has no per-unit middle ground)
      ProtectControlGroups = false;
      # other runs' workspaces are not even visible: an empty read-only directory over them,
      # with this run's own workspace bound back in
      TemporaryFileSystem = [ "${stateDir}/agents:ro" ];
      BindPaths = [ "${stateDir}/agents/%i" ];
      # the credential store is for the operator's tools; a run gets only LoadCredential= below
      InaccessiblePaths = [ "-${stateDir}/credentials" ];
      # the run talks to Ollama (and to the web when its manifest grants it) over TCP/IP
      RestrictAddressFamilies = [ "AF_UNIX" "AF_INET" "AF_INET6" ];
      SystemCallFilter = hardening.SystemCallFilter ++ [ landlockCalls ];
      LoadCredential = map (name: "${name}:${toString cfg.credentials.${name}.file}") (attrNames cfg.credentials);
      MemoryMax = cfg.limits.memoryMax;
      TasksMax = cfg.limits.tasksMax;
      RuntimeMaxSec = cfg.limits.runtimeMaxSec;
      # SIGTERM first: the run records itself as interrupted before it goes
      KillMode = "mixed";
      TimeoutStopSec = 30;
    } // optionalAttrs (cfg.sandbox == "bwrap") bwrapRelaxations
      // optionalAttrs (cfg.configRepo != null) {
      # self-evolution adds a proposal branch and registers its scratch worktree (the run's own
      # workspace) in the config repository's git data; hearth runs git there with hooks off
      ReadWritePaths = [ stateDir "${toString cfg.configRepo}/.git" ];
    };
  } // optionalAttrs (cfg.extraPackages != [ ]) {
    # the operator's tools for run_command: in the Nix store, which every command sees read-only
    path = cfg.extraPackages;
  };

  # services.hearth.submitters: the module makes them the hearth-submit group, and the spawner
  # then refuses a request file owned by anyone else (hearth/queue.py Owners)
  submitting = (cfg.submitters or [ ]) != [ ];
  spawnService = {
    description = "hearth queue: claim each request and start hearth-agent@ for it";
    environment = environment // optionalAttrs submitting { HEARTH_SUBMITTERS_GROUP = "hearth-submit"; };
    serviceConfig = hardening // (if spawnAlerts then spawnAlerting else offline) // optionalAttrs submitting {
      # the owner check needs each file's real owner: in a private user namespace every user but
      # hearth and root shows as nobody, so every submitter's request would be refused
      PrivateUsers = false;
    } // {
      Type = "oneshot";
      ExecStart = "${bin.hearth} spawn";
      # claims and rejects requests (renames inside the queue) and records rejections in the audit
      ReadWritePaths = [ stateDir ];
      InaccessiblePaths = [ "-${stateDir}/agents" "-${stateDir}/credentials" ];
      MemoryMax = "256M";
      TasksMax = 16;
      TimeoutStartSec = 300;  # a oneshot's time limit (RuntimeMaxSec does not apply)
    };
  };

  spawnAlerting = {
    # an alert destination wants refused requests: the spawner sends those (apprise, over TCP),
    # with the credentials the destinations' URLs name and no others
    RestrictAddressFamilies = [ "AF_UNIX" "AF_INET" "AF_INET6" ];
    LoadCredential = map (name: "${name}:${toString cfg.credentials.${name}.file}") alertCredentials;
  };

  selfTestService = {
    description = "hearth self-test: the whole run path against a scripted model, recorded";
    inherit environment;
    serviceConfig = hardening // offline // {
      Type = "oneshot";
      ExecStart = "${bin.hearthLoop} --self-test";
      ReadWritePaths = [ stateDir ];
      InaccessiblePaths = [ "-${stateDir}/agents" "-${stateDir}/credentials" ];
      SystemCallFilter = hardening.SystemCallFilter ++ [ landlockCalls ];
      MemoryMax = "1G";
      TasksMax = 64;
      TimeoutStartSec = 300;  # a oneshot's time limit (RuntimeMaxSec does not apply)
    } // optionalAttrs (cfg.sandbox == "bwrap") bwrapRelaxations;
  };

  # What a schedule's service runs: its mission (/etc/hearth/missions/NAME.toml, written by the
  # module) is enqueued through the same queue as any request, or skipped while it is paused.
  scheduleText = name: s: "exec ${bin.hearth} missions fire ${shellArg name}\n";

  scheduleService = name: s: {
    description = "hearth schedule ${name}: enqueue its goal";
    inherit environment;
    serviceConfig = hardening // offline // {
      Type = "oneshot";
      ExecStart = script "hearth-schedule-${name}" (scheduleText name s);
      # a schedule only drops a request into the queue (the queue does the rest), or records
      # that its paused mission skipped this time
      ReadWritePaths = [ "${stateDir}/queue" "${stateDir}/missions" ];
      MemoryMax = "128M";
      TasksMax = 8;
      TimeoutStartSec = 60;  # a oneshot's time limit (RuntimeMaxSec does not apply)
    };
  };

  # The command center (`hearth serve`, services.hearth.web). It runs as hearth, which is in the
  # submitters' group, so it enqueues as any submitter does; it writes the audit only to record
  # approval decisions and stops, reads the live state and the workspaces (for checkpoint diffs).
  web = cfg.web or { enable = false; };
  webTokens = builtins.filter (t: t.file != null) [
    { name = "operator-token"; file = web.operatorTokenFile or null; }
    { name = "viewer-token"; file = web.viewerTokenFile or null; }
  ];
  webService = {
    description = "hearth command center (hearth serve)";
    after = [ "network.target" ];
    wantedBy = [ "multi-user.target" ];
    inherit environment;
    serviceConfig = hardening // {
      Type = "exec";
      ExecStart = concatStringsSep " " ([ bin.hearth "serve" "--host" web.listenAddress "--port" (toString web.port) ]
        ++ builtins.concatMap (h: [ "--allowed-host" h ]) (web.allowedHosts or [ ]));
      # writable: the queue (requests), the audit (decisions, stops) and the knowledge base (removals)
      ReadWritePaths = [ stateDir ];
      # the live state is the runs' to write; the workspaces are read for checkpoint diffs only
      ReadOnlyPaths = [ "-${stateDir}/state" "-${stateDir}/agents" ];
      InaccessiblePaths = [ "-${stateDir}/credentials" ];
      # it listens on TCP and asks Ollama which models it has
      RestrictAddressFamilies = [ "AF_UNIX" "AF_INET" "AF_INET6" ];
      # checkpoint diffs run git inside the command sandbox, as the runs do
      SystemCallFilter = hardening.SystemCallFilter ++ [ landlockCalls ];
      # the tokens, read from $CREDENTIALS_DIRECTORY (operator-token, viewer-token), never the store
      LoadCredential = map (t: "${t.name}:${toString t.file}") webTokens;
      MemoryMax = "512M";
      TasksMax = 64;
      Restart = "on-failure";
    } // optionalAttrs (cfg.sandbox == "bwrap") bwrapRelaxations;
  };

  scheduleNames = attrNames cfg.schedules;
  named = f: names: listToAttrs (map (n: { name = f n; value = n; }) names);
in
{
  inherit hardening bwrapRelaxations environment;

  scripts = listToAttrs (map (n: { name = "hearth-schedule-${n}"; value = scheduleText n cfg.schedules.${n}; }) scheduleNames);

  services = {
    "hearth-agent@" = agentService;
    hearth-spawn = spawnService;
  } // optionalAttrs (cfg.selfTest.onCalendar != null) { hearth-self-test = selfTestService; }
    // optionalAttrs web.enable { hearth-web = webService; }
    // mapAttrs (_: n: scheduleService n cfg.schedules.${n}) (named (n: "hearth-schedule-${n}") scheduleNames);

  paths.hearth-spawn = {
    description = "hearth queue: a request is waiting";
    wantedBy = [ "multi-user.target" ];
    pathConfig = {
      # a request is <id>.json at the top of the queue; temp files start with a dot and do not match
      PathExistsGlob = "${stateDir}/queue/*.json";
      Unit = "hearth-spawn.service";
    };
  };

  timers = optionalAttrs (cfg.selfTest.onCalendar != null) {
    hearth-self-test = {
      description = "hearth self-test, on a calendar";
      wantedBy = [ "timers.target" ];
      timerConfig = { OnCalendar = cfg.selfTest.onCalendar; Persistent = true; };
    };
  } // mapAttrs (_: n: {
    description = "hearth schedule ${n}";
    wantedBy = [ "timers.target" ];
    timerConfig = { OnCalendar = cfg.schedules.${n}.onCalendar; Persistent = true; };
  }) (named (n: "hearth-schedule-${n}") scheduleNames);
}
