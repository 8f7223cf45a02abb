# The systemd units of hearth, rendered from their one source, ./units.toml (which
# `hearth install --systemd` renders too, for any systemd Linux). nix/module.nix feeds them to
# systemd.services/paths/timers; tests/nix/test_units.py evaluates this same file with plain
# `nix-instantiate` (no nixpkgs), renders the unit text and runs `systemd-analyze verify` and
# `security` on it. So this file uses builtins only, and everything host-specific comes in as an
# argument:
#
#   cfg     the services.hearth settings (see nix/module.nix for their meaning)
#   bin     { hearth = "/path/to/hearth"; hearthLoop = "/path/to/hearth-loop"; }
#   script  name: text: an executable running `text` with /bin/sh semantics (pkgs.writeShellScript)
#   ollamaLocal  whether services.ollama runs on this host (the agent units then start after it)
#
# units.toml holds the directives, hardening, sandboxing and fixed limits; this file adds only what
# comes from cfg: the environment, the limits and addresses the operator sets, credentials, the
# schedules, and the relaxations some settings need (each says why).
#
# How the command sandbox coexists with the unit hardening (nix/README.md has the long form):
# the agent unit itself is a mount namespace that shows a run only its own workspace, the audit
# and the queue; tool commands inside it are walled off again by the allow list of
# agent/safety/allowlist.py: under Landlock (sandbox = "landlock", the default) as read and write
# rules, which need no namespaces, so the unit keeps RestrictNamespaces=yes, PrivateUsers and
# every Protect* setting; under bwrap (sandbox = "bwrap", needed for commands' network) as the
# only things mounted, which relaxes exactly what bubblewrap needs ([bwrap] in units.toml).
#   text    name: text: a file in the store holding `text` (pkgs.writeText): the users' declaration
{ cfg, bin, script, ollamaLocal ? false, text ? builtins.toFile }:
let
  inherit (builtins) attrNames concatStringsSep listToAttrs mapAttrs removeAttrs replaceStrings;
  data = builtins.fromTOML (builtins.readFile ./units.toml);
  stateDir = cfg.stateDir;
  configDir = "/etc/hearth";
  # the part of stateDir below /var/lib, for StateDirectory= (the module asserts the prefix)
  stateRel = replaceStrings [ "/var/lib/" ] [ "" ] stateDir;
  optional = cond: value: if cond then [ value ] else [ ];
  optionalAttrs = cond: attrs: if cond then attrs else { };

  # units.toml's {placeholders}, filled in every string of a table (`extra`: a schedule's {name})
  vars = { inherit stateDir stateRel; inherit (bin) hearth hearthLoop; inherit (data) landlock; };
  fill = extra: value:
    let v = vars // extra; names = attrNames v; in
    if builtins.isString value then replaceStrings (map (n: "{${n}}") names) (map (n: v.${n}) names) value
    else if builtins.isList value then map (fill extra) value
    else if builtins.isAttrs value then mapAttrs (_: fill extra) value
    else value;

  hardening = fill { } data.hardening;
  offline = fill { } data.offline;
  bwrapRelaxations = fill { } (removeAttrs data.bwrap [ "add" ]);
  # [bwrap.add]: lists added to the unit's own, not put in their place
  bwrapAdded = fill { } (data.bwrap.add or { });
  withBwrap = acc: acc // bwrapRelaxations // mapAttrs (key: values: (acc.${key} or [ ]) ++ values) bwrapAdded;

  # one service's serviceConfig as units.toml composes it, with `host` (the values from cfg) laid
  # over the unit's own table; `layers` replaces the unit's (the spawner with alerts is not offline)
  serviceConfig = name: { extra ? { }, host ? { }, layers ? data.services.${name}.layers }:
    let
      u = data.services.${name};
      own = builtins.foldl' (acc: l: acc // fill { } data.${l}) hardening layers // fill extra u.service // host;
    in
    if (u.bwrap or false) && cfg.sandbox == "bwrap" then withBwrap own else own;
  # a unit's description and wantedBy, from its table in units.toml (kind: services, paths, timers)
  head = kind: name: extra: let u = fill extra data.${kind}.${name}; in
    { inherit (u) description; } // optionalAttrs (u ? wantedBy) { inherit (u) wantedBy; }
    // optionalAttrs (u ? unit) { unitConfig = u.unit; };
  unitHead = head "services";

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

  # The one endpoint every run needs: Ollama (each of its hosts), when a URL names a literal address
  # or localhost (IPAddressAllow= takes addresses, not names: another host goes into agentAddressAllow).
  hostOf = url:
    let
      v6 = builtins.match "[a-z+]+://\\[([^]]+)].*" url;  # `openai+http://...` names its kind first
      plain = builtins.match "[a-z+]+://([^/:]+).*" url;
    in if v6 != null then builtins.head v6 else if plain != null then builtins.head plain else "";
  allowOf = host:
    if host == "localhost" || builtins.match "127\\.[0-9.]+|::1" host != null then [ "localhost" ]
    else if builtins.match "[0-9.]+|[0-9a-fA-F:]+" host != null then [ host ]
    else [ ];
  # every Ollama host's (services.hearth.ollama.hosts), each once
  ollamaAllow = builtins.foldl' (seen: a: if builtins.elem a seen then seen else seen ++ [ a ]) [ ]
    (builtins.concatLists (map (url: allowOf (hostOf url)) ([ cfg.ollama.url ] ++ map (h: h.url) (cfg.ollama.hosts or [ ]))));

  # Alerts a refused request raises are sent by the spawner: only then does it get the network
  # and the credentials those destinations' URLs name.
  destinations = builtins.attrValues ((cfg.alerts or { }).destinations or { });
  spawnAlerts = builtins.any (d: builtins.elem "rejected" d.events) destinations;
  urlCredentials = url: map builtins.head (builtins.filter builtins.isList (builtins.split "\\{cred:([A-Za-z][A-Za-z0-9_.-]*)}" url));
  alertCredentials = builtins.filter (n: cfg.credentials ? ${n}) (builtins.concatLists (map (d: urlCredentials d.url) destinations));
  loadCredentials = names: map (name: "${name}:${toString cfg.credentials.${name}.file}") names;

  agentService = unitHead "hearth-agent@" { } // {
    after = data.services."hearth-agent@".after ++ optional ollamaLocal "ollama.service";
    wants = optional ollamaLocal "ollama.service";
    # the unit's cgroup is hearth's to divide (Delegate= in units.toml)
    environment = environment // { HEARTH_CGROUP_DELEGATED = "1"; };
    serviceConfig = serviceConfig "hearth-agent@" {
      host = {
        # with alerts, loopback too: a run's alert is sent from a child whose only way out is a
        # guard proxy on 127.0.0.1 in this unit (hearth/leash/alertnet.py); the run's own tools
        # still reach no loopback address (the network guard), its commands have no such network
        IPAddressAllow = ollamaAllow ++ cfg.agentAddressAllow
          ++ (if destinations != [ ] && !(builtins.elem "localhost" ollamaAllow) then [ "localhost" ] else [ ]);
        LoadCredential = loadCredentials (attrNames cfg.credentials);
        MemoryMax = cfg.limits.memoryMax;
        TasksMax = cfg.limits.tasksMax;
        RuntimeMaxSec = cfg.limits.runtimeMaxSec;
      } // optionalAttrs (cfg.configRepo != null) {
        # self-evolution adds a proposal branch and registers its scratch worktree (the run's own
        # workspace) in the config repository's git data; hearth runs git there with hooks off
        ReadWritePaths = [ stateDir "${toString cfg.configRepo}/.git" ];
      };
    };
  } // optionalAttrs (cfg.extraPackages != [ ]) {
    # the operator's tools for run_command: in the Nix store, which every command sees read-only
    path = cfg.extraPackages;
  };

  # services.hearth.submitters: the module makes them the hearth-submit group, and the spawner
  # then refuses a request file owned by anyone else (hearth/queue/directory.py Owners)
  submitting = (cfg.submitters or [ ]) != [ ];
  spawnService = unitHead "hearth-spawn" { } // {
    environment = environment // optionalAttrs submitting { HEARTH_SUBMITTERS_GROUP = "hearth-submit"; };
    serviceConfig = serviceConfig "hearth-spawn" ({
      host = optionalAttrs submitting {
        # the owner check needs each file's real owner: in a private user namespace every user but
        # hearth and root shows as nobody, so every submitter's request would be refused
        PrivateUsers = false;
      } // optionalAttrs spawnAlerts {
        # an alert destination wants refused requests: the spawner sends those (apprise, over TCP),
        # with the credentials the destinations' URLs name and no others
        RestrictAddressFamilies = [ "AF_UNIX" "AF_INET" "AF_INET6" ];
        LoadCredential = loadCredentials alertCredentials;
      };
    } // optionalAttrs spawnAlerts { layers = [ ]; });
  };

  selfTestService = unitHead "hearth-self-test" { } // {
    inherit environment;
    serviceConfig = serviceConfig "hearth-self-test" { };
  };

  scheduleText = name: fill { inherit name; } data.scripts.schedule;
  scheduleService = name: unitHead "hearth-schedule-" { inherit name; } // {
    inherit environment;
    serviceConfig = serviceConfig "hearth-schedule-" {
      extra = { inherit name; };
      host = { ExecStart = script "hearth-schedule-${name}" (scheduleText name); }
        # a role's heartbeat records its firing (or skip) in the audit, whose -wal and -shm SQLite
        # makes beside it at the state directory's top level; the runs' workspaces and the
        # credentials stay out of reach, as for the self-test
        // optionalAttrs (builtins.elem name (map (n: "heartbeat-${n}") heartbeats)) {
          ReadWritePaths = [ stateDir ];
          InaccessiblePaths = [ "-${stateDir}/agents" "-${stateDir}/credentials" ];
        };
    };
  };

  # The command center (`hearth serve`, services.hearth.web).
  web = cfg.web or { enable = false; };
  webTokens = builtins.filter (t: t.file != null) [
    { name = "operator-token"; file = web.operatorTokenFile or null; }
    { name = "viewer-token"; file = web.viewerTokenFile or null; }
  ];
  webService = unitHead "hearth-web" { } // {
    inherit (data.services.hearth-web) after;
    inherit environment;
    serviceConfig = serviceConfig "hearth-web" {
      host = {
        ExecStart = concatStringsSep " " ([ bin.hearth "serve" "--host" web.listenAddress "--port" (toString web.port) ]
          ++ builtins.concatMap (h: [ "--allowed-host" h ]) (web.allowedHosts or [ ]));
        # the tokens, read from $CREDENTIALS_DIRECTORY (operator-token, viewer-token), never the store
        LoadCredential = map (t: "${t.name}:${toString t.file}") webTokens;
      };
    };
  };

  # The chat channels (services.hearth.channels): `hearth channels`, its secrets as credentials only.
  channels = cfg.channels or { };
  channelOn = name: (channels.${name} or { enable = false; }).enable;
  channelSecrets = builtins.filter (c: channelOn c.channel) [
    { channel = "telegram"; name = "telegram-token"; file = channels.telegram.tokenFile or null; }
    { channel = "email"; name = "email-password"; file = channels.email.passwordFile or null; }
  ];
  channelsOn = channelSecrets != [ ];
  channelsHead = unitHead "hearth-channels" { };
  channelsService = channelsHead // {
    inherit (data.services.hearth-channels) after;
    # units.toml's Wants=, as NixOS takes it (an After= on network-online.target without a `wants` warns)
    wants = [ channelsHead.unitConfig.Wants ];
    unitConfig = removeAttrs channelsHead.unitConfig [ "Wants" ];
    inherit environment;
    serviceConfig = serviceConfig "hearth-channels" {
      host.LoadCredential = map (c: "${c.name}:${toString c.file}") (builtins.filter (c: c.file != null) channelSecrets);
    };
  };

  # The declared users (services.hearth.users), as `hearth users apply` reads them (hearth/users/declared.py):
  # each token and key file is passed as a credential, user-NAME-token-N and user-NAME-key-KEY (the
  # names `hearth install --systemd` gives install.toml's), and the declaration names only those.
  users = cfg.users or { };
  tokenCredentials = name: u: builtins.genList (i: {
    name = "user-${name}-token-${toString (i + 1)}"; file = builtins.elemAt u.tokenFiles i; }) (builtins.length u.tokenFiles);
  keyCredentials = name: u: map (k: { name = "user-${name}-key-${k}"; file = u.keys.${k}.file; }) (attrNames u.keys);
  userCredentials = builtins.concatLists (builtins.attrValues (mapAttrs (n: u: tokenCredentials n u ++ keyCredentials n u) users));
  declaration = {
    users = mapAttrs (name: u: {
      inherit (u) role disabled memberships telegram email;
      default_profile = u.defaultProfile;
      token_files = map (c: c.name) (tokenCredentials name u);
      keys = mapAttrs (k: key: { file = "user-${name}-key-${k}"; inherit (key) agents budget rate; }) u.keys;
    }) users;
  };
  declarationText = builtins.toJSON declaration;
  # a path string (pkgs.writeText gives a derivation), so {declaration} can be filled in like the others
  declarationFile = "${text "hearth-users.json" declarationText}";
  usersService = unitHead "hearth-users" { declaration = declarationFile; } // {
    inherit environment;
    serviceConfig = serviceConfig "hearth-users" {
      extra.declaration = declarationFile;
      host.LoadCredential = map (c: "${c.name}:${toString c.file}") userCredentials;
    };
  };

  # the schedules (missions) and the roles' heartbeats (a mission named heartbeat-<role>), each a timer
  heartbeats = builtins.filter (n: (cfg.agents.${n}.heartbeat or null) != null) (attrNames (cfg.agents or { }));
  onCalendar = listToAttrs (map (n: { name = n; value = cfg.schedules.${n}.onCalendar; }) (attrNames cfg.schedules)
    ++ map (n: { name = "heartbeat-${n}"; value = cfg.agents.${n}.heartbeat; }) heartbeats);
  scheduleNames = attrNames onCalendar;
  named = f: names: listToAttrs (map (n: { name = f n; value = n; }) names);
in
{
  inherit hardening bwrapRelaxations bwrapAdded environment declarationText;
  tmpfiles = fill { } data.tmpfiles.rules;
  polkit = fill { stop = if web.enable || channelsOn then data.polkit.stop else ""; } data.polkit.rule;

  scripts = listToAttrs (map (n: { name = "hearth-schedule-${n}"; value = scheduleText n; }) scheduleNames);

  services = {
    "hearth-agent@" = agentService;
    hearth-spawn = spawnService;
  } // optionalAttrs (cfg.selfTest.onCalendar != null) { hearth-self-test = selfTestService; }
    // optionalAttrs web.enable { hearth-web = webService; }
    // optionalAttrs channelsOn { hearth-channels = channelsService; }
    // optionalAttrs (users != { }) { hearth-users = usersService; }
    // mapAttrs (_: n: scheduleService n) (named (n: "hearth-schedule-${n}") scheduleNames);

  paths.hearth-spawn = head "paths" "hearth-spawn" { } // {
    pathConfig = fill { } data.paths.hearth-spawn.path;
  };

  timers = {
    hearth-spawn = head "timers" "hearth-spawn" { } // { timerConfig = data.timers.hearth-spawn.timer; };
  } // optionalAttrs (cfg.selfTest.onCalendar != null) {
    hearth-self-test = head "timers" "hearth-self-test" { } // {
      timerConfig = data.timers.hearth-self-test.timer // { OnCalendar = cfg.selfTest.onCalendar; };
    };
  } // mapAttrs (_: n: head "timers" "hearth-schedule-" { name = n; } // {
    timerConfig = data.timers."hearth-schedule-".timer // { OnCalendar = onCalendar.${n}; };
  }) (named (n: "hearth-schedule-${n}") scheduleNames);
}
