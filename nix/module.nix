# services.hearth: the whole appliance from one `enable`. Options first; the units themselves
# live in ./units.nix (shared with the tests, which render and lint them without NixOS).
{ config, lib, pkgs, ... }:
let
  inherit (lib) mkOption mkEnableOption mkIf mkMerge types literalExpression;
  cfg = config.services.hearth;
  modes = [ "plan" "auto" "bypass" ];

  units = import ./units.nix {
    inherit cfg;
    bin = { hearth = "${cfg.package}/bin/hearth"; hearthLoop = "${cfg.package}/bin/hearth-loop"; };
    script = pkgs.writeShellScript;
    ollamaLocal = cfg.ollama.enable;
  };

  nullOrMode = mkOption {
    type = types.nullOr (types.enum modes);
    default = null;
    example = "plan";
    description = "Policy mode (plan: read-only tools; auto: asks before dangerous ones; bypass: runs everything); null means `defaultMode`.";
  };
  nullOrTools = mkOption {
    type = types.nullOr (types.listOf types.str);
    default = null;
    example = [ "read_file" "list_files" "write_file" ];
    description = "The only tools the run may use; null means every tool the mode allows.";
  };
  nullOrModel = mkOption {
    type = types.nullOr types.str;
    default = null;
    example = "qwen2.5-coder:7b";
    description = "Ollama model; null means `defaultModel`.";
  };

  agentOptions = { name, ... }: {
    options = {
      model = nullOrModel;
      mode = nullOrMode;
      allowedTools = nullOrTools;
      maxIterations = mkOption {
        type = types.nullOr (types.ints.between 1 100);
        default = null;
        example = 30;
        description = "Model turns a run of this agent may take; null means `maxIterations`.";
      };
      prompt = mkOption {
        type = types.lines;
        default = "";
        example = "You keep the notes in ./notes tidy and never delete a note.";
        description = "Instructions for this agent, written to /etc/hearth/agents/${name}/AGENTS.md.";
      };
    };
  };

  scheduleOptions = { name, ... }: {
    options = {
      goal = mkOption {
        type = types.str;
        example = "Summarise yesterday's runs into notes/daily.md";
        description = "The goal the scheduled run gets.";
      };
      agent = mkOption {
        type = types.str;
        default = "default";
        example = "notes";
        description = "The agent profile (a name in `agents`, or `default`).";
      };
      onCalendar = mkOption {
        type = types.str;
        example = "*-*-* 06:00:00";
        description = "When to enqueue the goal, a systemd calendar event (systemd.time(7)).";
      };
      mode = nullOrMode;
      allowedTools = nullOrTools;
      model = nullOrModel;
    };
  };

  credentialOptions = { name, ... }: {
    options = {
      file = mkOption {
        type = types.path;
        example = "/run/secrets/github-token";
        description = "File holding the secret; handed to the agent units only, through LoadCredential as `${name}`.";
      };
      hosts = mkOption {
        type = types.listOf types.str;
        example = [ "api.github.com" ];
        description = "The only hosts `cred:${name}` may be sent to.";
      };
    };
  };

  # TOML by hand: JSON strings and arrays of strings are valid TOML values.
  agentToml = name: a: lib.concatStringsSep "\n" ([ "name = ${builtins.toJSON name}" ]
    ++ lib.optional (a.model != null) "model = ${builtins.toJSON a.model}"
    ++ lib.optional (a.mode != null) "mode = ${builtins.toJSON a.mode}"
    ++ lib.optional (a.allowedTools != null) "allowed_tools = ${builtins.toJSON a.allowedTools}"
    ++ lib.optional (a.maxIterations != null) "max_iterations = ${toString a.maxIterations}") + "\n";

  agentFiles = lib.concatMapAttrs (name: a: {
    "hearth/agents/${name}/AGENTS.md".text = a.prompt;
    "hearth/agents/${name}/agent.toml".text = agentToml name a;
  }) cfg.agents;

  # what every agent's system prompt gets besides its role (hearth/run/prompting.py)
  promptFiles = lib.concatMapAttrs (name: text: { "hearth/prompts/${name}.md".text = text; }) cfg.prompts
    // (if cfg.soul != "" then { "hearth/SOUL.md".text = cfg.soul; } else { });
  stopVerb = if cfg.web.enable then ''action.lookup("verb") == "stop" || '' else "";
  safeName = name: builtins.match "[A-Za-z0-9][A-Za-z0-9_.-]*" name != null;

  # Unit definitions from units.nix, plus what only NixOS knows.
  service = name: unit: unit // {
    path = [ pkgs.bash pkgs.coreutils pkgs.git pkgs.nix ]
      ++ lib.optional (cfg.sandbox == "bwrap") pkgs.bubblewrap;
    # a switch must not kill runs in flight or re-run a oneshot
    restartIfChanged = false;
  };
in
{
  options.services.hearth = {
    enable = mkEnableOption "hearth, the local sandboxed agent appliance (queue, per-run units, audit)";

    package = mkOption {
      type = types.package;
      default = pkgs.callPackage ./package.nix { };
      defaultText = literalExpression "pkgs.callPackage ./nix/package.nix { }";
      example = literalExpression "hearth.packages.x86_64-linux.default";
      description = "The hearth package (provides `hearth` and `hearth-loop`).";
    };

    stateDir = mkOption {
      type = types.str;
      default = "/var/lib/hearth";
      example = "/var/lib/hearth-lab";
      description = "Queue, audit database, live state and per-run workspaces. Must be below /var/lib (each run's workspace is a StateDirectory).";
    };

    ollama = {
      url = mkOption {
        type = types.str;
        default = "http://127.0.0.1:11434";
        example = "http://gpu-box.lan:11434";
        description = "The Ollama server the runs talk to.";
      };
      enable = mkOption {
        type = types.bool;
        default = false;
        example = true;
        description = "Also run Ollama on this host (services.ollama); runs then start after it.";
      };
      models = mkOption {
        type = types.listOf types.str;
        default = [ ];
        example = [ "qwen2.5-coder:7b" ];
        description = "Models services.ollama pulls at start (its loadModels) when `ollama.enable` is set.";
      };
    };

    defaultModel = mkOption {
      type = types.str;
      default = "qwen2.5-coder";
      example = "llama3.1:8b";
      description = "Model for runs whose request or profile names none.";
    };

    defaultMode = mkOption {
      type = types.enum modes;
      default = "auto";
      example = "plan";
      description = "Policy mode for runs whose request or profile names none.";
    };

    maxIterations = mkOption {
      type = types.ints.between 1 100;
      default = 12;
      example = 20;
      description = "Model turns a run may take before it stops with a summary.";
    };

    agents = mkOption {
      type = types.attrsOf (types.submodule agentOptions);
      default = { };
      example = literalExpression ''{ notes = { mode = "auto"; allowedTools = [ "read_file" "write_file" ]; prompt = "Keep notes tidy."; }; }'';
      description = "Agent profiles, written to /etc/hearth/agents/<name>/ (AGENTS.md and agent.toml).";
    };

    prompts = mkOption {
      type = types.attrsOf types.lines;
      default = { };
      example = literalExpression ''{ "10-house-rules" = "Run the tests before you report success."; }'';
      description = ''
        Guidance for every agent, written to /etc/hearth/prompts/<name>.md and added to each system
        prompt in name order, after the base prompt and before the agent's own. Placeholders such as
        {{gitBranch}} or {{currentDateTimeIso}} are filled at run start; `hearth doctor --context`
        shows the result.
      '';
    };

    soul = mkOption {
      type = types.lines;
      default = "";
      example = "You are calm, exact and brief. You say what you did not check.";
      description = "The voice of every agent, written to /etc/hearth/SOUL.md (nothing when empty); never read from a workspace.";
    };

    schedules = mkOption {
      type = types.attrsOf (types.submodule scheduleOptions);
      default = { };
      example = literalExpression ''{ daily-notes = { goal = "Summarise yesterday"; agent = "notes"; onCalendar = "daily"; }; }'';
      description = "Goals enqueued on a calendar: each is a timer whose service runs `hearth enqueue`, so it goes through the same queue as any request.";
    };

    credentials = mkOption {
      type = types.attrsOf (types.submodule credentialOptions);
      default = { };
      example = literalExpression ''{ github = { file = "/run/secrets/github"; hosts = [ "api.github.com" ]; }; }'';
      description = "Secrets used by name (`cred:NAME`). Only hearth-agent@ units get them (LoadCredential); the model never sees a value.";
    };

    submitters = mkOption {
      type = types.listOf types.str;
      default = [ ];
      example = [ "alice" ];
      description = "Users who may drop requests into the queue (members of the hearth-submit group).";
    };

    selfTest.onCalendar = mkOption {
      type = types.nullOr types.str;
      default = "daily";
      example = "hourly";
      description = "When to run `hearth-loop --self-test` (recorded in the audit); null disables the timer.";
    };

    configRepo = mkOption {
      type = types.nullOr types.str;
      default = null;
      example = "/etc/nixos";
      description = "Git checkout of this system's flake, for self-evolution: `hearth evolve` proposes changes on a branch of it, checked with `nix flake check --no-build`. hearth never activates a configuration.";
    };

    sandbox = mkOption {
      type = types.enum [ "landlock" "bwrap" "none" ];
      default = "landlock";
      example = "bwrap";
      description = ''
        How tool commands are contained inside the (already hardened) agent unit.
        landlock: reads and writes limited to the allow list (system paths, a few /etc files, the workspace), no network; needs no namespaces, so the unit keeps RestrictNamespaces.
        bwrap: the allow list is all that exists for a command, it runs as nobody, and a run may grant commands network through its guarded proxy; at the price of letting the unit create namespaces and mounts (see nix/README.md).
        none: only rlimits and the timeout (unsafe).
      '';
    };

    extraPackages = mkOption {
      type = types.listOf types.package;
      default = [ ];
      example = literalExpression "[ pkgs.ripgrep pkgs.nodejs ]";
      description = "Programs the agent's run_command may use, on its PATH. They live in the Nix store, which every command sees read-only; nothing else of the host is visible to a command.";
    };

    exposePaths = mkOption {
      type = types.listOf types.str;
      default = [ ];
      example = [ "/opt/sdk" ];
      description = "More host paths commands see, read-only (HEARTH_SANDBOX_EXPOSE), for tools that are not in the Nix store. The unit's own view (ProtectSystem, ProtectHome) still applies.";
    };

    tripwires = mkOption {
      type = types.enum [ "home" "workspace" "off" ];
      default = "home";
      example = "workspace";
      description = "Decoy secrets with canary values: in each run's sandbox home (home), there and in its workspace (workspace), or none (off). Touching one trips the wire.";
    };

    tripwireAction = mkOption {
      type = types.enum [ "stop" "record" ];
      default = "stop";
      example = "record";
      description = "What a tripped wire does: stop the run with status `tripped`, or only record it (both write the audit and a critical journal line).";
    };

    agentAddressAllow = mkOption {
      type = types.listOf types.str;
      default = [ ];
      example = [ "0.0.0.0/0" "::/0" ];
      description = "IPAddressAllow= entries of the agent unit beyond the Ollama endpoint: where the web tools and the commands' proxy may connect at the IP level (the network guard still refuses private and local addresses). Empty: Ollama only, so no web access.";
    };

    web = {
      enable = mkEnableOption "the command center, `hearth serve`: a web page to launch, watch, approve, replay and review runs";
      listenAddress = mkOption {
        type = types.str;
        default = "127.0.0.1";
        example = "0.0.0.0";
        description = "Address the command center listens on. Anything but loopback needs `operatorTokenFile` or `viewerTokenFile` (it refuses to start without one).";
      };
      port = mkOption {
        type = types.ints.between 1 65535;
        default = 8770;
        example = 8080;
        description = "Port the command center listens on.";
      };
      allowedHosts = mkOption {
        type = types.listOf types.str;
        default = [ ];
        example = [ "hearth.lan" "192.168.1.20" ];
        description = "Host names (or addresses) browsers reach the page by, besides the listen address; any other Host header is refused (DNS rebinding).";
      };
      operatorTokenFile = mkOption {
        type = types.nullOr types.path;
        default = null;
        example = "/run/secrets/hearth-operator-token";
        description = "File holding the operator token (launch, approve, stop); passed to the unit with LoadCredential=, never in the Nix store.";
      };
      viewerTokenFile = mkOption {
        type = types.nullOr types.path;
        default = null;
        example = "/run/secrets/hearth-viewer-token";
        description = "File holding the viewer token (read only); passed with LoadCredential=.";
      };
      openFirewall = mkOption {
        type = types.bool;
        default = false;
        example = true;
        description = "Open `port` in the firewall (only useful with a non-loopback `listenAddress`).";
      };
    };

    limits = {
      commandTasksMax = mkOption {
        type = types.ints.positive;
        default = 256;
        example = 64;
        description = "pids.max of a run's commands (their cgroup, below the unit's; keep it under tasksMax, which hearth itself counts against too).";
      };
      commandMemoryMB = mkOption {
        type = types.ints.positive;
        default = 1024;
        example = 4096;
        description = "memory.max of a run's commands in MiB (their cgroup, below the unit's; keep it under memoryMax).";
      };
      commandCpuSec = mkOption {
        type = types.ints.positive;
        default = 1800;
        example = 600;
        description = "CPU seconds all of a run's commands may use; each process is also capped by the kernel at what is left (RLIMIT_CPU).";
      };
      memoryMax = mkOption {
        type = types.str;
        default = "2G";
        example = "8G";
        description = "MemoryMax= of each run (the agent and every command it starts).";
      };
      tasksMax = mkOption {
        type = types.ints.positive;
        default = 512;
        example = 128;
        description = "TasksMax= of each run.";
      };
      runtimeMaxSec = mkOption {
        type = types.ints.positive;
        default = 3600;
        example = 600;
        description = "RuntimeMaxSec= of each run: the unit is stopped (and the run recorded as interrupted) after this.";
      };
    };
  };

  config = mkIf cfg.enable (mkMerge [
    {
      assertions = [
        { assertion = lib.hasPrefix "/var/lib/" cfg.stateDir && !(lib.hasInfix ".." cfg.stateDir);
          message = "services.hearth.stateDir must be below /var/lib (got ${cfg.stateDir}): each run's workspace is a StateDirectory"; }
        { assertion = cfg.configRepo == null || lib.hasPrefix "/" cfg.configRepo;
          message = "services.hearth.configRepo must be an absolute path"; }
        { assertion = cfg.limits.commandTasksMax < cfg.limits.tasksMax;
          message = "services.hearth.limits.commandTasksMax must be below limits.tasksMax: hearth itself runs in the same unit"; }
        { assertion = builtins.all (p: lib.hasPrefix "/" p) cfg.exposePaths;
          message = "services.hearth.exposePaths must be absolute paths"; }
      ] ++ lib.mapAttrsToList (name: s: {
        assertion = s.agent == "default" || cfg.agents ? ${s.agent};
        message = "services.hearth.schedules.${name}.agent is ${s.agent}, which is not in services.hearth.agents";
      }) cfg.schedules ++ lib.mapAttrsToList (name: _: {
        assertion = builtins.match "[A-Za-z0-9_.-]+" name != null;
        message = "services.hearth.credentials.${name}: a credential name is letters, digits, '.', '_' and '-'";
      }) cfg.credentials ++ lib.mapAttrsToList (name: _: {
        assertion = safeName name && builtins.stringLength name <= 64;
        message = "services.hearth.agents.${name}: an agent name is letters, digits, '.', '_' and '-', at most 64, not starting with '.'";
      }) cfg.agents ++ lib.mapAttrsToList (name: _: {
        assertion = safeName name;
        message = "services.hearth.prompts.${name}: a prompt name is letters, digits, '.', '_' and '-', not starting with '.'";
      }) cfg.prompts;

      users.users.hearth = {
        isSystemUser = true;
        group = "hearth";
        extraGroups = [ "hearth-submit" ];
        home = cfg.stateDir;
        description = "hearth agent appliance";
      };
      users.groups.hearth = { };
      users.groups.hearth-submit.members = cfg.submitters;

      systemd.tmpfiles.rules = [
        # others may pass through (to reach the queue) but not list
        "d ${cfg.stateDir} 0711 hearth hearth - -"
        # submitters write requests; setgid keeps them in hearth-submit, which hearth reads
        "d ${cfg.stateDir}/queue 2770 hearth hearth-submit - -"
        "d ${cfg.stateDir}/agents 0700 hearth hearth - -"
        "d ${cfg.stateDir}/state 0750 hearth hearth - -"
        "d ${cfg.stateDir}/credentials 0700 hearth hearth - -"
      ];

      environment.etc = agentFiles // promptFiles // {
        # host bindings only; the secrets themselves never leave their files
        "hearth/credentials.json".text = builtins.toJSON (lib.mapAttrs (_: c: { inherit (c) hosts; }) cfg.credentials);
      };
      environment.systemPackages = [ cfg.package ];

      systemd.services = lib.mapAttrs service units.services;
      systemd.paths = units.paths;
      systemd.timers = units.timers;

      # hearth-spawn runs as hearth and may start (only) the per-run units; with the command center
      # on, hearth may also stop them (its Stop buttons, as `systemctl stop`)
      security.polkit.enable = true;
      security.polkit.extraConfig = ''
        polkit.addRule(function (action, subject) {
          if (action.id == "org.freedesktop.systemd1.manage-units" && subject.user == "hearth" &&
              ${stopVerb}(action.lookup("verb") == "start") && /^hearth-agent@[A-Za-z0-9_.:-]+\.service$/.test(action.lookup("unit"))) {
            return polkit.Result.YES;
          }
        });
      '';
    }
    (mkIf cfg.web.enable {
      assertions = [
        { assertion = builtins.elem cfg.web.listenAddress [ "127.0.0.1" "::1" "localhost" ]
            || cfg.web.operatorTokenFile != null || cfg.web.viewerTokenFile != null;
          message = "services.hearth.web.listenAddress is ${cfg.web.listenAddress}: beyond loopback the command center needs operatorTokenFile or viewerTokenFile"; }
      ];
      networking.firewall.allowedTCPPorts = lib.optional cfg.web.openFirewall cfg.web.port;
    })
    (mkIf cfg.ollama.enable {
      services.ollama.enable = true;
      services.ollama.loadModels = cfg.ollama.models;
    })
  ]);
}
