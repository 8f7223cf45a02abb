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
    text = pkgs.writeText;
    ollamaLocal = cfg.ollama.enable;
  };

  # services.hearth.users.<name> (hearth/users/declared.py reads what units.nix makes of it)
  userOptions = { name, ... }: {
    options = {
      role = mkOption {
        type = types.enum [ "owner" "operator" "viewer" ];
        example = "operator";
        description = "owner: everything; operator: what `memberships` say; viewer: read only.";
      };
      defaultProfile = mkOption {
        type = types.strMatching "[A-Za-z0-9][A-Za-z0-9._-]{0,63}";
        default = "default";
        example = "builder";
        description = "The agent profile this user's chats run under.";
      };
      disabled = mkOption {
        type = types.bool;
        default = false;
        example = true;
        description = "Refuse everything this user does, through every door, keeping the user and what they did.";
      };
      memberships = mkOption {
        type = types.attrsOf (types.listOf (types.enum [ "launch" "approve" ]));
        default = { };
        example = { builder = [ "launch" "approve" ]; "*" = [ "approve" ]; };
        description = "An operator's rights per agent profile (`*`: every profile): launch (and continue and stop) its runs, approve their calls.";
      };
      tokenFiles = mkOption {
        type = types.listOf types.path;
        default = [ ];
        example = [ "/run/secrets/hearth-ada-token" ];
        description = "Files each holding one of this user's command-center sign-in tokens (16 characters or more, e.g. `openssl rand -base64 32`); passed to hearth-users.service with LoadCredential=, never in the Nix store; only their SHA-256 is kept.";
      };
      keys = mkOption {
        type = types.attrsOf (types.submodule {
          options = {
            file = mkOption {
              type = types.path;
              example = "/run/secrets/hearth-ada-laptop-key";
              description = "File holding the key's secret (a LoadCredential= credential, never in the store).";
            };
            agents = mkOption {
              type = types.listOf types.str;
              default = [ ];
              example = [ "builder" ];
              description = "Profiles the key may use; empty: any.";
            };
            budget = mkOption {
              type = types.ints.unsigned;
              default = 0;
              example = 50000;
              description = "Tokens a day (UTC) for the key's runs; 0: none of its own.";
            };
            rate = mkOption {
              type = types.ints.unsigned;
              default = 0;
              example = 10;
              description = "Calls a minute; 0: no limit.";
            };
          };
        });
        default = { };
        example = literalExpression ''{ laptop.file = "/run/secrets/hearth-ada-laptop-key"; }'';
        description = "This user's keys of the OpenAI-compatible `/v1` door, by name (as `hearth keys add`).";
      };
      telegram = mkOption {
        type = types.listOf (types.strMatching "[1-9][0-9]{0,19}");
        default = [ ];
        example = [ "123456789" ];
        description = "Telegram user ids that are this user (the platform says who sent a message, never its text).";
      };
      email = mkOption {
        type = types.listOf types.str;
        default = [ ];
        example = [ "ada@example.org" ];
        description = "E-mail addresses that are this user (as the receiving server checked them).";
      };
    };
  };

  # services.hearth.channels.<name>: channels.toml's table, its secret a credential of hearth-channels.service
  channelOptions = what: secretOption: secretWhat: credential: example: {
    enable = mkEnableOption "the ${what} channel of hearth-channels.service (`hearth channels`, docs/channels.md)";
    ${secretOption} = mkOption {
      type = types.nullOr types.path;
      default = null;
      example = "/run/secrets/hearth-${credential}";
      description = "File holding ${secretWhat}; passed as the credential `${credential}` (LoadCredential=), never in the Nix store.";
    };
    settings = mkOption {
      type = types.attrsOf (types.oneOf [ types.str types.int types.bool ]);
      default = { };
      inherit example;
      description = "The channel's table in channels.toml (docs/channels.md: its keys, and the limits max_chars, flood_per_minute, refuse_every_s); the secret goes in `${secretOption}`.";
    };
  };
  # channels.toml from the enabled channels' settings (flat tables: a JSON string, number or
  # boolean is the same TOML value)
  channelsToml = builtins.concatStringsSep "\n" (lib.mapAttrsToList (name: c:
    "[${name}]\n" + builtins.concatStringsSep "" (lib.mapAttrsToList (k: v: "${k} = ${builtins.toJSON v}\n") c.settings))
    (lib.filterAttrs (_: c: c.enable) cfg.channels));
  channelsEnabled = builtins.any (c: c.enable) (builtins.attrValues cfg.channels);

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
      fallbacks = fallbacksOption "this agent's model";
      escalate = mkOption {
        type = types.nullOr types.bool;
        default = null;
        example = true;
        description = "Retry a run that ends iteration_limit or failed once on the next fallback (a linked run); null means `router.escalate`.";
      };
      maxTokens = maxTokensOption "a run of this agent";
      maxMode = mkOption {
        type = types.nullOr (types.enum modes);
        default = null;
        example = "plan";
        description = "The most any run of this agent may get (plan < auto < bypass): a request asking for more is refused naming this limit, a default above it is capped to it; null means no ceiling. Written as `max_mode`.";
      };
      maxTools = mkOption {
        type = types.nullOr (types.listOf types.str);
        default = null;
        example = [ "read_file" "list_files" ];
        description = "The only tools any run of this agent may get: a request naming another is refused, one naming none gets these; null means no ceiling. `allowedTools` must lie inside it. Written as `max_tools`.";
      };
      toolSet = mkOption {
        type = types.nullOr (types.enum [ "common" "all" ]);
        default = null;
        example = "all";
        description = "What a run without `allowedTools` is shown: the common chores or every tool; null means HEARTH_TOOL_SET (common). Written as `tool_set`.";
      };
      think = mkOption {
        type = types.nullOr (types.either types.bool (types.enum [ "low" "medium" "high" ]));
        default = null;
        example = "low";
        description = "Ollama's think option for a thinking model (levels for the models that take them); null means not sent.";
      };
      webExtract = mkOption {
        type = types.nullOr types.bool;
        default = null;
        example = false;
        description = "web_fetch answers through a no-tools extractor, so the agent never reads the raw page; null means on. Written as `web_extract`.";
      };
      home = mkOption {
        type = types.bool;
        default = false;
        example = true;
        description = "This agent is a role: its runs work in a durable home, `stateDir`/roles/<name>, one run at a time (docs/roles.md).";
      };
      heartbeat = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "hourly";
        description = "A role's heartbeat: a systemd calendar event on which a timer (hearth-schedule-heartbeat-<name>) wakes it for one upkeep turn that continues its heartbeat conversation; null means none. Needs `home`.";
      };
      strategicReview = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "12h";
        description = "A heartbeat is a strategic review once the role's last one is this old; null means 24h. Written as `strategic_review`.";
      };
      enabled = mkOption {
        type = types.bool;
        default = true;
        example = false;
        description = "false switches the role off: its heartbeats are skipped (recorded) and its requests refused with the reason.";
      };
    };
  };

  fallbacksOption = what: mkOption {
    type = types.listOf types.str;
    default = [ ];
    example = [ "qwen2.5-coder:3b" ];
    description = "Models tried in order when ${what} is not pulled or the run ends model_unavailable (each must be in `ollama.models` when Ollama runs here).";
  };
  maxTokensOption = what: mkOption {
    type = types.nullOr (types.ints.between 1 100000000);
    default = null;
    example = 50000;
    description = "Tokens ${what} may spend (prompt and reply, as Ollama counts them) before it stops as budget_exceeded; null means no cap of its own.";
  };
  nullOrList = example: what: mkOption {
    type = types.nullOr (types.listOf types.str);
    default = null;
    inherit example;
    description = what;
  };

  ruleOptions = { name, ... }: {
    options = {
      name = mkOption {
        type = types.str;
        example = "coder";
        description = "The rule's name, recorded as the reason its model was chosen.";
      };
      model = mkOption {
        type = types.strMatching "[A-Za-z0-9][A-Za-z0-9._:/-]*";
        example = "qwen2.5-coder:7b";
        description = "The model a run matching this rule gets.";
      };
      agents = nullOrList [ "builder" ] "Match only runs of these agent profiles; null matches any.";
      modes = mkOption {
        type = types.nullOr (types.listOf (types.enum modes));
        default = null;
        example = [ "auto" ];
        description = "Match only runs in these modes; null matches any.";
      };
      tools = nullOrList [ "run_command" ] "Match runs that may use one of these tools (a run with every tool may); null matches any.";
      sources = mkOption {
        type = types.nullOr (types.listOf (types.enum [ "command-center" "cli" "timer" "self-test" ]));
        default = null;
        example = [ "timer" ];
        description = "Match only requests from these sources; null matches any.";
      };
      goalRegex = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "(?i)\\btests?\\b";
        description = "Match goals in which this regular expression (Python syntax) is found.";
      };
      goalMaxChars = mkOption {
        type = types.nullOr (types.ints.between 0 100000);
        default = null;
        example = 2000;
        description = "Match goals at most this long.";
      };
      fallbacks = fallbacksOption "the rule's model";
      escalate = mkOption {
        type = types.bool;
        default = false;
        example = true;
        description = "Retry a run of this rule that ends iteration_limit or failed once on the next fallback.";
      };
      host = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "gpu1";
        description = "Send the turns of a run of this rule only to the Ollama host of this label (`ollama.hosts`); null: any host that has the model.";
      };
    };
  };

  hostOptions = { ... }: {
    options = {
      url = mkOption {
        type = types.strMatching "https?://.+";
        example = "http://10.0.0.5:11434";
        description = "The host's URL (an OpenAI-compatible server's with or without its /v1). The agent units may reach it when it names an address (IPAddressAllow= takes no names: put a name's address in `agentAddressAllow`).";
      };
      kind = mkOption {
        type = types.enum [ "ollama" "openai" ];
        default = "ollama";
        example = "openai";
        description = "What the host speaks: Ollama's API, or OpenAI's /v1/chat/completions (llama.cpp's llama-server, vLLM, LM Studio, LocalAI, SGLang).";
      };
      timeoutSec = mkOption {
        type = types.nullOr types.ints.positive;
        default = null;
        example = 900;
        description = "How long a run waits for this host to begin answering, then for each chunk of its reply; null: `settings.ollamaTimeoutSec`.";
      };
      apiKey = mkOption {
        type = types.nullOr (types.strMatching "[A-Za-z][A-Za-z0-9_.-]*");
        default = null;
        example = "vllm";
        description = "The name of a credential (`credentials.NAME`, bound to this host) sent as the host's bearer token (vLLM's --api-key); null: none.";
      };
      label = mkOption {
        type = types.str;
        default = "";
        example = "gpu1";
        description = "The name runs and the command center show for it, and router rules pin with `host`.";
      };
      weight = mkOption {
        type = types.ints.positive;
        default = 1;
        example = 2;
        description = "Its share of the load: a host of weight 2 is given runs until it holds twice the memory of a host of weight 1.";
      };
    };
  };

  alertEvents = [ "failed" "interrupted" "budget_exceeded" "approval" "tripped" "rejected" "done" "iteration_limit" "stuck" "model_unavailable" "denied" "mcp_drift" "eval_regression" "skill_retired" ];
  destinationOptions = { name, ... }: {
    options = {
      url = mkOption {
        type = types.str;
        example = "ntfy://{cred:ntfy-token}@ntfy.example.org/hearth";
        description = "An apprise URL (ntfy, tgram, slack, matrix, mailto, json, ...); `{cred:NAME}` is replaced at send time by the credential NAME of `services.hearth.credentials`, never written to the Nix store.";
      };
      events = mkOption {
        type = types.listOf (types.enum alertEvents);
        default = [ "failed" "interrupted" "budget_exceeded" "approval" "tripped" "rejected" "mcp_drift" "eval_regression" "skill_retired" ];
        example = [ "failed" "approval" ];
        description = "What this destination is told of: run statuses, `approval` (a call waits for a decision) and `rejected` (a refused request).";
      };
      local = mkOption {
        type = types.bool;
        default = false;
        example = true;
        description = "Whether this destination is on this machine or the LAN: only then may its host be (or resolve to) a loopback, link-local, private or other special-purpose address, which alerts are otherwise refused.";
      };
    };
  };

  mcpToolOptions = { name, ... }: {
    options = {
      risk = mkOption {
        type = types.enum [ "safe" "edit" "dangerous" ];
        default = "dangerous";
        example = "safe";
        description = "The tool's risk class: the run's mode and approvals treat it as one of hearth's own tools of that class.";
      };
      offer = mkOption {
        type = types.bool;
        default = true;
        example = false;
        description = "Whether runs are offered the tool once it is approved (`hearth mcp approve`); false withholds it.";
      };
    };
  };

  mcpServerOptions = { name, ... }: {
    options = {
      transport = mkOption {
        type = types.enum [ "stdio" "http" ];
        default = "stdio";
        example = "http";
        description = "stdio: hearth starts `command` in the command sandbox; http: a streamable-HTTP `url`, reached through the run's network guard.";
      };
      command = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "/run/current-system/sw/bin/mcp-server-git";
        description = "The stdio server's program.";
      };
      args = mkOption {
        type = types.listOf types.str;
        default = [ ];
        example = [ "--repository" "." ];
        description = "The stdio server's arguments.";
      };
      url = mkOption {
        type = types.nullOr (types.strMatching "https?://.+");
        default = null;
        example = "https://mcp.example.org/mcp";
        description = "The http server's endpoint.";
      };
      env = mkOption {
        type = types.attrsOf types.str;
        default = { };
        example = { GITHUB_TOKEN = "github"; };
        description = "Environment of a stdio server: variable -> the NAME of a credential in `services.hearth.credentials` (never a value).";
      };
      headers = mkOption {
        type = types.attrsOf types.str;
        default = { };
        example = { Authorization = "Bearer cred:forge"; };
        description = "Headers of an http server's requests; `cred:NAME` is the credential's value, sent only if the credential is bound to the url's host.";
      };
      network = mkOption {
        type = types.listOf types.str;
        default = [ ];
        example = [ "api.github.com" ];
        description = "The hosts the server may reach (egress patterns); empty: none.";
      };
      read = mkOption {
        type = types.listOf types.str;
        default = [ ];
        example = [ "/var/lib/notes" ];
        description = "More read-only paths a stdio server needs inside the sandbox.";
      };
      timeout = mkOption {
        type = types.ints.between 1 600;
        default = 30;
        example = 60;
        description = "Seconds one call may take (cut to what is left of the run's time limit).";
      };
      tools = mkOption {
        type = types.attrsOf (types.submodule mcpToolOptions);
        default = { };
        example = literalExpression ''{ read_file = { risk = "safe"; }; delete_file = { offer = false; }; }'';
        description = "Per tool (as the server names it): its risk class and whether it is offered; a tool not named is dangerous.";
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
      egress = nullOrList [ "api.github.com" ] "Hosts the mission's network tools may reach; null means any public host.";
      credentials = mkOption {
        type = types.listOf types.str;
        default = [ ];
        example = [ "github" ];
        description = "Credential names (of `credentials`) the mission's run may use as cred:NAME.";
      };
      maxIterations = mkOption {
        type = types.nullOr (types.ints.between 1 100);
        default = null;
        example = 20;
        description = "Model turns the mission's run may take; null means the agent's, else `maxIterations`.";
      };
      maxTokens = maxTokensOption "the mission's run";
      timeoutS = mkOption {
        type = types.nullOr (types.ints.between 1 86400);
        default = null;
        example = 600;
        description = "Seconds before the mission's run stops; null means 3600.";
      };
      label = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "daily notes";
        description = "The label its runs carry in the audit and the command center.";
      };
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
  agentToml = name: a: tomlKeys {
    inherit name; inherit (a) model mode escalate;
    allowed_tools = a.allowedTools; max_iterations = a.maxIterations; max_tokens = a.maxTokens;
    max_mode = a.maxMode; max_tools = a.maxTools;
    tool_set = a.toolSet; inherit (a) think; web_extract = a.webExtract;
    fallbacks = if a.fallbacks == [ ] then null else a.fallbacks;
    home = if a.home then true else null; inherit (a) heartbeat; strategic_review = a.strategicReview;
    enabled = if a.enabled then null else false;
    heartbeat_timer = if a.heartbeat == null then null else "systemd";  # the timer below fires it, not hearth watch
  };
  # plan < auto < bypass, as hearth/run/profiles.py ranks them
  modeRank = m: if m == "plan" then 0 else if m == "auto" then 1 else 2;
  # `key = value` lines of the non-null values (in name order)
  toml = v: if builtins.isBool v then (if v then "true" else "false") else if builtins.isInt v then toString v else builtins.toJSON v;
  tomlKeys = attrs: lib.concatStringsSep "" (map (k: "${k} = ${toml attrs.${k}}\n")
    (builtins.filter (k: attrs.${k} != null) (builtins.attrNames attrs)));

  ruleToml = r: "\n[[rule]]\n" + tomlKeys {
    inherit (r) name model agents modes tools sources escalate host;
    goal = r.goalRegex; goal_max_chars = r.goalMaxChars;
    fallbacks = if r.fallbacks == [ ] then null else r.fallbacks;
  };
  routerToml = tomlKeys { default = cfg.router.default; fallbacks = if cfg.router.fallbacks == [ ] then null else cfg.router.fallbacks; escalate = cfg.router.escalate; }
    + lib.concatStringsSep "" (map ruleToml cfg.router.rules)
    + lib.concatStringsSep "" (map (h: "\n[[host]]\n" + tomlKeys {
        inherit (h) url weight;
        label = if h.label == "" then null else h.label;
        kind = if h.kind == "ollama" then null else h.kind;
        timeout_s = h.timeoutSec;
        api_key = if h.apiKey == null then null else "cred:${h.apiKey}";
      }) cfg.ollama.hosts);
  budgetToml = tomlKeys { daily = cfg.budget.daily; }
    + (if cfg.budget.perAgent == { } then "" else "\n[per_agent]\n" + tomlKeys cfg.budget.perAgent);
  alertsToml = lib.concatStringsSep "" (lib.mapAttrsToList (name: d: "\n[[destination]]\n" + tomlKeys ({ inherit name; inherit (d) url events; } // (if d.local or false then { local = true; } else { }))) cfg.alerts.destinations)
    + approvalToml;
  # the [approval] table: where a phone reaches the command center, and when an undecided approval is alerted again
  approvalKeys = { public_url = cfg.alerts.approval.publicUrl; remind_after = cfg.alerts.approval.remindAfter; remind_before = cfg.alerts.approval.remindBefore; };
  approvalToml = if builtins.all (v: v == null) (builtins.attrValues approvalKeys) then "" else "\n[approval]\n" + tomlKeys approvalKeys;
  missionToml = s: tomlKeys {
    schedule = s.onCalendar; timer = "systemd"; inherit (s) goal agent model mode egress label;
    allowed_tools = s.allowedTools; max_iterations = s.maxIterations; max_tokens = s.maxTokens; timeout_s = s.timeoutS;
    credentials = if s.credentials == [ ] then null else s.credentials;
  };
  # [env], [headers] and [tools."NAME"] tables after the server's own keys
  mcpTable = title: attrs: if attrs == { } then "" else "\n[${title}]\n" + lib.concatStringsSep "" (lib.mapAttrsToList (k: v: "${builtins.toJSON k} = ${builtins.toJSON v}\n") attrs);
  mcpToml = s: tomlKeys {
    inherit (s) transport command url read timeout;
    args = if s.args == [ ] then null else s.args;
    egress = s.network;
  } + mcpTable "env" s.env + mcpTable "headers" s.headers
    + lib.concatStringsSep "" (lib.mapAttrsToList (t: r: "\n[tools.${builtins.toJSON t}]\nrisk = ${toml r.risk}\noffered = ${toml r.offer}\n") s.tools);
  mcpFiles = lib.concatMapAttrs (name: s: { "hearth/mcp/${name}.toml".text = mcpToml s; }) cfg.mcp.servers;
  missionFiles = lib.concatMapAttrs (name: s: { "hearth/missions/${name}.toml".text = missionToml s; }) cfg.schedules;
  leashFiles = { "hearth/router.toml".text = routerToml; "hearth/budget.toml".text = budgetToml; }
    // (if cfg.alerts.destinations == { } then { } else { "hearth/alerts.toml".text = alertsToml; });

  # the credential names an alert URL uses: {cred:NAME}
  urlCredentials = url: map builtins.head (builtins.filter builtins.isList (builtins.split "\\{cred:([A-Za-z][A-Za-z0-9_.-]*)}" url));
  pulled = m: builtins.elem m cfg.ollama.models || builtins.any (p: lib.hasPrefix "${m}:" p) cfg.ollama.models;
  allFallbacks = cfg.router.fallbacks ++ builtins.concatLists (map (r: r.fallbacks) cfg.router.rules)
    ++ builtins.concatLists (lib.mapAttrsToList (_: a: a.fallbacks) cfg.agents);
  checkModels = cfg.ollama.enable && cfg.ollama.models != [ ];

  agentFiles = lib.concatMapAttrs (name: a: {
    "hearth/agents/${name}/AGENTS.md".text = a.prompt;
    "hearth/agents/${name}/agent.toml".text = agentToml name a;
  }) cfg.agents;

  # what every agent's system prompt gets besides its role (hearth/run/prompting.py)
  promptFiles = lib.concatMapAttrs (name: text: { "hearth/prompts/${name}.md".text = text; }) cfg.prompts
    // (if cfg.soul != "" then { "hearth/SOUL.md".text = cfg.soul; } else { });
  safeName = name: builtins.match "[A-Za-z0-9][A-Za-z0-9_.-]*" name != null;

  # The Ollama services.ollama serves, when this host runs it (its own or the operator's).
  ollamaHere = cfg.ollama.enable || (config.services.ollama.enable or false);
  ollamaServed = "http://${config.services.ollama.host or "127.0.0.1"}:${toString (config.services.ollama.port or 11434)}";

  # `settings` as the HEARTH_* variables hearth reads (hearth/settings.py); null leaves hearth's default.
  knobs = {
    approvalTimeoutSec = "HEARTH_APPROVAL_TIMEOUT_S";
    approvalWait = "HEARTH_APPROVAL_WAIT";
    autoApprovedCommands = "HEARTH_AUTO_COMMANDS";
    recallChars = "HEARTH_RECALL_CHARS";
    embedModel = "HEARTH_EMBED_MODEL";
    netPrivateHosts = "HEARTH_NET_PRIVATE_HOSTS";
    searchUrl = "HEARTH_SEARCH_URL";
    ollamaTimeoutSec = "HEARTH_OLLAMA_TIMEOUT_S";
    logLevel = "HEARTH_LOG_LEVEL";
  };
  # semantic recall's model, pulled beside the run models when this module runs Ollama
  embedModel = if cfg.settings.embedModel == null then "nomic-embed-text" else cfg.settings.embedModel;
  knobValue = v: if builtins.isList v then lib.concatStringsSep "," v else toString v;
  settingsEnv = lib.concatMapAttrs (name: var:
    if cfg.settings.${name} == null || cfg.settings.${name} == [ ] then { } else { ${var} = knobValue cfg.settings.${name}; }) knobs;

  # Unit definitions from units.nix, plus what only NixOS knows.
  service = name: unit: unit // {
    # what the agent's commands find on PATH: a shell, the core tools, git, nix, python3 (the
    # demo's and most scripts' interpreter), and what the operator adds
    path = [ pkgs.bash pkgs.coreutils pkgs.git pkgs.nix pkgs.python3 ]
      ++ lib.optional (cfg.sandbox == "bwrap") pkgs.bubblewrap
      ++ cfg.extraPackages;
    environment = (unit.environment or { }) // settingsEnv // cfg.environment;
    # a switch must not kill runs in flight or re-run a oneshot; the channels restart with their
    # settings (nothing they hold is lost), and the users' apply runs again on a new declaration
    restartIfChanged = builtins.elem name [ "hearth-channels" "hearth-users" ];
  };

  # Several boxes (fleet.hub, worker; docs/fleet.md). The broker's URL is in the units' text, its
  # password and a worker's token only in files handed over with LoadCredential= (hearth/fleet/config.py
  # reads $CREDENTIALS_DIRECTORY/broker-password and fleet-token).
  hub = cfg.fleet.hub;
  worker = cfg.worker;
  fleetName = types.strMatching "[a-z0-9][a-z0-9._-]{0,62}"; # hearth/fleet/config.py NAME
  brokerUrlType = types.nullOr (types.strMatching "rediss?://.+");
  carriesPassword = url: url != null
    && (builtins.match "[a-z]+://[^/@]*:[^/@]*@.*" url != null || lib.hasInfix "password=" url);
  brokerCredential = file: lib.optional (file != null) "broker-password:${toString file}";
  redisUnit = lib.optional hub.redis.enable "redis-hearth.service";
  loopback = a: builtins.elem a [ "127.0.0.1" "::1" "localhost" ];
  redisAddresses = builtins.filter (a: builtins.isString a && a != "") (builtins.split " +" hub.redis.bind);
  # fleet.hub or worker on a box without services.hearth.enable would do nothing: say so
  fleetWithoutHearth = mkIf (!cfg.enable && (hub.enable || worker.enable)) {
    assertions = [ { assertion = false;
      message = "services.hearth.fleet.hub and services.hearth.worker need services.hearth.enable: the hub and each worker run requests as a single box does"; } ];
  };
  # IPAddressAllow= for endpoints whose URLs all name an address (or localhost); null when one
  # names a host, since IPAddressAllow= takes no names
  addressOf = url:
    let
      v6 = builtins.match "[a-z+]+://([^/@]*@)?\\[([^]]+)].*" url;
      v4 = builtins.match "[a-z+]+://([^/@]*@)?([0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+)([:/].*)?" url;
      named = builtins.match "[a-z+]+://([^/@]*@)?localhost([:/].*)?" url;
      host = if v6 != null then builtins.elemAt v6 1 else if v4 != null then builtins.elemAt v4 1 else null;
    in if named != null || host == "::1" || (host != null && lib.hasPrefix "127." host) then "localhost" else host;
  uniq = builtins.foldl' (seen: a: if builtins.elem a seen then seen else seen ++ [ a ]) [ ];
  allowOnly = urls: let found = map addressOf urls; in if builtins.elem null found then null else uniq found;

  # The hub: the spawner sends each claimed request to the broker instead of starting a unit; the
  # command center, which answers the workers at /fleet/, asks the same launcher which runs are alive.
  hubEnv = { HEARTH_LAUNCHER = "celery"; HEARTH_FLEET_BROKER = toString hub.brokerUrl; };
  hubUnit = u: u // {
    after = (u.after or [ ]) ++ redisUnit;
    wants = (u.wants or [ ]) ++ redisUnit;
    environment = (u.environment or { }) // hubEnv;
    serviceConfig = u.serviceConfig // {
      LoadCredential = (u.serviceConfig.LoadCredential or [ ]) ++ brokerCredential hub.brokerPasswordFile;
    };
  };
  # the spawner leaves [offline] for TCP to the broker, and to the broker alone when its URL names an
  # address (a spawner that sends alerts is open already)
  hubSpawn = u:
    let sc = u.serviceConfig; allow = allowOnly [ (toString hub.brokerUrl) ]; in
    hubUnit u // {
      serviceConfig = builtins.removeAttrs (hubUnit u).serviceConfig [ "PrivateNetwork" "IPAddressDeny" ] // {
        RestrictAddressFamilies = [ "AF_UNIX" "AF_INET" "AF_INET6" ];
      } // (if sc ? IPAddressDeny && allow != null then { IPAddressDeny = "any"; IPAddressAllow = allow; } else { });
    };

  # The worker: one long-running `hearth worker` that takes requests from the broker and runs each
  # through its own `hearth watch`, a forked child (hearth/fleet/worker.py), so this unit is the runs' wall: the
  # agent unit's serviceConfig (units.toml, with the same credentials, addresses and sandbox mode)
  # less what belongs to one instance, plus the hub and the broker. What that costs against a
  # hearth-agent@ unit per run is in nix/README.md ("Several boxes").
  agentUnit = units.services."hearth-agent@".serviceConfig;
  # `size` (limits.memoryMax) times n, when it is a number with an optional K/M/G/T suffix
  times = n: size: let m = builtins.match "([1-9][0-9]*)([KMGT]?)" size; in
    if m == null then size else "${toString (n * builtins.fromJSON (builtins.head m))}${builtins.elemAt m 1}";
  # IPAddressAllow= takes no names: a hub or broker named by host goes into agentAddressAllow
  fleetAddresses = builtins.filter (a: a != null) (map addressOf [ (toString worker.hub) (toString worker.brokerUrl) ]);
  workerAllow = uniq ((agentUnit.IPAddressAllow or [ ]) ++ fleetAddresses);
  workerService = {
    description = "hearth worker ${toString worker.name}: runs the hub's requests on this box (hearth worker)";
    after = [ "network-online.target" ] ++ lib.optional cfg.ollama.enable "ollama.service";
    wants = [ "network-online.target" ] ++ lib.optional cfg.ollama.enable "ollama.service";
    wantedBy = [ "multi-user.target" ];
    environment = units.environment // {
      HEARTH_FLEET_HUB = toString worker.hub;
      HEARTH_FLEET_NAME = toString worker.name;
      HEARTH_FLEET_BROKER = toString worker.brokerUrl;
      HEARTH_FLEET_CONCURRENCY = toString worker.concurrency;
    };
    # one instance's settings go: its StateDirectory (the worker makes each workspace), the
    # view of its own workspace alone, the delegated cgroup (several runs share this unit, whose
    # own process sits in its root cgroup) and its run-time limit (this unit runs for good)
    # (under bwrap, the bare /proc a command's sandbox needs stays: units.toml's [bwrap.add])
    serviceConfig = builtins.removeAttrs agentUnit [ "StateDirectory" "StateDirectoryMode" "TemporaryFileSystem" "BindPaths" "Delegate" "RuntimeMaxSec" ]
      // (if cfg.sandbox == "bwrap" then units.bwrapAdded else { }) // {
      ExecStart = "${cfg.package}/bin/hearth worker";
      ProtectControlGroups = true;
      # it talks to the broker and the hub's command center too
      IPAddressAllow = workerAllow;
      # the runs' credentials, the worker's token and the broker's password, from $CREDENTIALS_DIRECTORY
      LoadCredential = (agentUnit.LoadCredential or [ ]) ++ [ "fleet-token:${toString worker.tokenFile}" ]
        ++ brokerCredential worker.brokerPasswordFile;
      # every run gets SIGTERM and records itself interrupted; the worker then acknowledges its requests
      KillMode = "control-group";
      TimeoutStopSec = 60;
      # room for `concurrency` runs at each run's limits, and the worker's own threads
      MemoryMax = times worker.concurrency cfg.limits.memoryMax;
      TasksMax = worker.concurrency * cfg.limits.tasksMax + 64;
      Restart = "on-failure";
      RestartSec = "10s";
    };
  };

  fleetServices = s:
    (if hub.enable then s // { hearth-spawn = hubSpawn s.hearth-spawn; }
      // (if s ? hearth-web then { hearth-web = hubUnit s.hearth-web; } else { }) else s)
    // (if worker.enable then { hearth-worker = workerService; } else { });

in
{
  options.services.hearth = {
    enable = mkEnableOption "hearth, the local sandboxed agent appliance (queue, per-run units, audit)";

    # pkgs.hearth when an overlay provides it, else this repository's own package (with `commit`
    # null: callPackage would fill it with nixpkgs' `commit`, an editor); the flake's
    # nixosModules.default sets it to the flake's package
    package = lib.mkPackageOption pkgs "hearth" {
      example = "hearth.packages.x86_64-linux.default";
      extraDescription = "It provides `hearth` and `hearth-loop`, their completions and man pages.";
    } // { default = pkgs.hearth or (pkgs.callPackage ./package.nix { commit = null; }); };

    environment = mkOption {
      type = types.attrsOf types.str;
      default = { };
      example = { HEARTH_RECALL_CHARS = "4000"; };
      description = "More environment of every hearth unit; wins over `settings` and the module's own HEARTH_* values (see `hearth-loop --help` for them).";
    };

    settings = {
      approvalTimeoutSec = mkOption {
        type = types.nullOr types.ints.positive;
        default = null;
        example = 900;
        description = "How long an approval waits for a person before the call is denied, in seconds (HEARTH_APPROVAL_TIMEOUT_S; null: 12 hours). approvalWait, if set, wins.";
      };
      approvalWait = mkOption {
        type = types.nullOr (types.strMatching "[0-9]+(\\.[0-9]+)?[smhd]?");
        default = null;
        example = "8h";
        description = "How long an approval waits for a person before the call is denied: seconds, or a number with s, m, h or d, at most 7 days (HEARTH_APPROVAL_WAIT; null: 12h). A queued run holds no process while it waits.";
      };
      autoApprovedCommands = mkOption {
        type = types.listOf types.str;
        default = [ ];
        example = [ "git" "ls" "pytest" ];
        description = "Programs `auto` mode runs without asking when a command is simple and uses only these (HEARTH_AUTO_COMMANDS).";
      };
      recallChars = mkOption {
        type = types.nullOr (types.ints.between 0 100000);
        default = null;
        example = 4000;
        description = "Knowledge and memory recalled into a run's first message, in characters; 0 turns it off (HEARTH_RECALL_CHARS; null: 2000).";
      };
      embedModel = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "mxbai-embed-large";
        description = "The Ollama embedding model of semantic recall, pulled with `ollama.models` when `ollama.enable` is set; \"off\" searches by text only (HEARTH_EMBED_MODEL; null: nomic-embed-text). After a change: hearth kb reembed. The fusion weights are HEARTH_RECALL_TEXT_WEIGHT and HEARTH_RECALL_MEANING_WEIGHT in `environment`.";
      };
      netPrivateHosts = mkOption {
        type = types.listOf types.str;
        default = [ ];
        example = [ "nas.lan" ];
        description = "LAN hosts network tools may reach at private addresses (HEARTH_NET_PRIVATE_HOSTS).";
      };
      searchUrl = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "http://searx.lan:8888/search";
        description = "A SearXNG search endpoint (its JSON API) that web_search and research runs ask instead of DuckDuckGo, through the network guard; a LAN one is also named in netPrivateHosts (HEARTH_SEARCH_URL; null: DuckDuckGo through ddgs).";
      };
      ollamaTimeoutSec = mkOption {
        type = types.nullOr types.ints.positive;
        default = null;
        example = 600;
        description = "How long a run waits for its model server to begin answering, then for each chunk of a streamed reply (HEARTH_MODEL_TIMEOUT_S; null: 600).";
      };
      logLevel = mkOption {
        type = types.nullOr (types.enum [ "DEBUG" "INFO" "WARNING" "ERROR" "CRITICAL" ]);
        default = null;
        example = "INFO";
        description = "Libraries' log records on the journal at this level, always redacted (HEARTH_LOG_LEVEL; null: none).";
      };
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
        default = if ollamaHere then ollamaServed else "http://127.0.0.1:11434";
        defaultText = literalExpression ''"http://''${config.services.ollama.host}:''${toString config.services.ollama.port}" when services.ollama is enabled, else "http://127.0.0.1:11434"'';
        example = "http://gpu-box.lan:11434";
        description = "The model server the runs talk to: an Ollama URL, or `openai+URL` for an OpenAI-compatible one (llama.cpp, vLLM); by default the Ollama services.ollama serves on this host.";
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
      hosts = mkOption {
        type = types.listOf (types.submodule hostOptions);
        default = [ ];
        example = literalExpression ''[ { url = "http://10.0.0.5:11434"; label = "gpu1"; } { url = "http://10.0.0.6:11434"; label = "gpu2"; weight = 2; } ]'';
        description = "Several Ollama hosts: each run's turns go to one that is up and has the model (loaded there first, then the least busy for its weight), and to the next when it fails. Written to /etc/hearth/router.toml; empty: `url` alone.";
      };
    };

    defaultModel = mkOption {
      type = types.str;
      # the first model this host pulls, so a run's default is one Ollama has (an untagged name
      # means :latest, which a host that pulled qwen2.5-coder:7b does not have)
      default = if cfg.ollama.enable && cfg.ollama.models != [ ] then builtins.head cfg.ollama.models else "qwen2.5-coder";
      defaultText = literalExpression ''the first of ollama.models when ollama.enable, else "qwen2.5-coder"'';
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

    mcp.servers = mkOption {
      type = types.attrsOf (types.submodule mcpServerOptions);
      default = { };
      example = literalExpression ''{ git = { command = "/run/current-system/sw/bin/mcp-server-git"; tools.git_status.risk = "safe"; }; }'';
      description = "MCP tool servers, written to /etc/hearth/mcp/<name>.toml; their tools reach runs only once approved (`hearth mcp review|approve`).";
    };

    schedules = mkOption {
      type = types.attrsOf (types.submodule scheduleOptions);
      default = { };
      example = literalExpression ''{ daily-notes = { goal = "Summarise yesterday"; agent = "notes"; onCalendar = "daily"; }; }'';
      description = "Goals enqueued on a calendar: each is a timer whose service runs `hearth enqueue`, so it goes through the same queue as any request.";
    };

    router = {
      default = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "qwen2.5-coder:7b";
        description = "The model of an `auto` run that no rule matches; null means `defaultModel`.";
      };
      rules = mkOption {
        type = types.listOf (types.submodule ruleOptions);
        default = [ ];
        example = literalExpression ''[ { name = "coder"; model = "qwen2.5-coder:7b"; tools = [ "run_command" ]; fallbacks = [ "qwen2.5-coder:3b" ]; } ]'';
        description = "How `auto` runs (a request naming no model, or `auto`) get a model: the first rule whose every condition matches, written to /etc/hearth/router.toml.";
      };
      fallbacks = fallbacksOption "any run's model";
      escalate = mkOption {
        type = types.bool;
        default = false;
        example = true;
        description = "Retry any run that ends iteration_limit or failed once on its next fallback.";
      };
    };

    budget = {
      daily = mkOption {
        type = types.nullOr (types.ints.between 0 1000000000000);
        default = null;
        example = 2000000;
        description = "Tokens the whole box may spend a day (midnight to midnight, local time); then running runs stop as budget_exceeded and new requests are refused until it resets. null: no budget.";
      };
      perAgent = mkOption {
        type = types.attrsOf (types.ints.between 0 1000000000000);
        default = { };
        example = { notes = 100000; };
        description = "Daily token budgets of single agent profiles (names in `agents`, or `default`).";
      };
    };

    alerts.destinations = mkOption {
      type = types.attrsOf (types.submodule destinationOptions);
      default = { };
      example = literalExpression ''{ phone = { url = "ntfy://{cred:ntfy-token}@ntfy.example.org/hearth"; events = [ "failed" "approval" ]; }; }'';
      description = "Where alerts go (apprise URLs), written to /etc/hearth/alerts.toml; every alert is recorded in the audit as sent or failed. `hearth alerts test` tries each.";
    };

    alerts.approval = {
      publicUrl = mkOption {
        type = types.nullOr (types.strMatching "https?://.+");
        default = null;
        example = "https://hearth.lan:8443";
        description = "Where a phone reaches `hearth serve` (a reverse proxy with TLS in front, on the LAN or a VPN): the base of the Approve and Deny links an approval alert carries. null: HEARTH_WEB_URL.";
      };
      remindAfter = mkOption {
        type = types.nullOr (types.either types.str (types.enum [ false ]));
        default = null;
        example = "2h";
        description = "An approval still undecided this long after it was asked is alerted once more (false: never; null: 1h).";
      };
      remindBefore = mkOption {
        type = types.nullOr (types.either types.str (types.enum [ false ]));
        default = null;
        example = "30m";
        description = "An approval still undecided this long before it expires is alerted once more (false: never; null: 15m).";
      };
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
      description = "Users who may drop requests into the queue and read the audit with `hearth runs` and `hearth show` (members of the hearth-submit group; the audit database is group-readable to them, nothing else of the state is).";
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
      description = "More programs on the PATH of every hearth unit, so the agent's run_command finds them (bash, coreutils, git, nix and python3 are always there). They live in the Nix store, which every command sees read-only; nothing else of the host is visible to a command.";
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
      publicUrl = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "https://hearth.lan";
        description = "The address people open the command center at, for links in alerts; null means http://<listenAddress>:<port>.";
      };
      openFirewall = mkOption {
        type = types.bool;
        default = false;
        example = true;
        description = "Open `port` in the firewall (only useful with a non-loopback `listenAddress`).";
      };
    };

    users = mkOption {
      type = types.attrsOf (types.submodule userOptions);
      default = { };
      example = literalExpression ''
        {
          ada = {
            role = "operator";
            defaultProfile = "builder";
            memberships.builder = [ "launch" "approve" ];
            tokenFiles = [ "/run/secrets/hearth-ada-token" ];
            telegram = [ "123456789" ];
          };
          bea.role = "owner";
        }
      '';
      description = "The users of hearth, declared (docs/users.md): hearth-users.service runs `hearth users apply` at boot and whenever this changes, which adds and changes them, and disables (never removes) every user not named here, made by hand or not; each change is recorded as done by `config`. The built-in `operator` and `viewer` are left alone unless named. Empty: users are managed by hand only (`hearth users`, the Users page).";
    };

    channels = {
      telegram = channelOptions "Telegram (a bot, long-polled: the box needs no public address)" "tokenFile" "the bot's token from @BotFather" "telegram-token" {
        poll_s = 25;
      };
      email = channelOptions "e-mail (IMAP and SMTP)" "passwordFile" "the mailbox's password" "email-password" {
        address = "hearth@example.org";
        authserv_id = "mail.example.org";
        imap_host = "mail.example.org";
        smtp_host = "mail.example.org";
      };
    };

    fleet.hub = {
      enable = mkEnableOption "the hub of several boxes (docs/fleet.md): this box keeps the queue, the command center and the one audit, and sends each request through a Redis broker (Celery) to a worker (`services.hearth.worker` on the other boxes); needs `web.enable`, where the workers report";
      brokerUrl = mkOption {
        type = brokerUrlType;
        default = if hub.redis.enable then "redis://127.0.0.1:${toString hub.redis.port}/0" else null;
        defaultText = literalExpression ''"redis://127.0.0.1:''${toString redis.port}/0" when redis.enable, else null'';
        example = "rediss://broker.lan:6380/0";
        description = "The broker the hub's units use, without a password (HEARTH_FLEET_BROKER): redis:// or rediss:// (TLS). A password in it fails the build; it goes into `brokerPasswordFile`.";
      };
      brokerPasswordFile = mkOption {
        type = types.nullOr types.path;
        default = null;
        example = "/run/secrets/hearth-broker";
        description = "File holding the broker's password: Redis's requirepass when `redis.enable`, and the hub's units' credential `broker-password` (LoadCredential=), never in the Nix store. Required when Redis listens beyond loopback.";
      };
      redis = {
        enable = mkOption {
          type = types.bool;
          default = true;
          example = false;
          description = "Run the broker on this box: services.redis.servers.hearth (redis-hearth.service), with `brokerPasswordFile` as its password; the hub's units start after it.";
        };
        bind = mkOption {
          type = types.str;
          default = "127.0.0.1";
          example = "127.0.0.1 10.0.0.1";
          description = "Addresses Redis listens on, space-separated: add the one the workers reach, and keep 127.0.0.1 for the hub's own units (brokerUrl's default). Open `port` in the firewall to the workers only (docs/fleet.md).";
        };
        port = mkOption {
          type = types.ints.between 1 65535;
          default = 6379;
          example = 6380;
          description = "Redis's TCP port.";
        };
      };
    };

    worker = {
      enable = mkEnableOption "a worker of a hub (docs/fleet.md): hearth-worker.service, `hearth worker`, takes requests from the hub's broker and runs each on this box as its own hearth would (its sandbox, limits and Ollama hosts), reporting to the hub";
      hub = mkOption {
        type = types.nullOr (types.strMatching "https?://[^ /]+(/[^ ]*)?");
        default = null;
        example = "http://10.0.0.1:8770";
        description = "The hub's command center, as this box reaches it (HEARTH_FLEET_HUB): its `web.listenAddress` and `web.port`, or the reverse proxy in front of it.";
      };
      name = mkOption {
        type = types.nullOr fleetName;
        default = null;
        example = "gpu1";
        description = "This worker's name, the one given to `hearth fleet add` on the hub (HEARTH_FLEET_NAME).";
      };
      tokenFile = mkOption {
        type = types.nullOr types.path;
        default = null;
        example = "/run/secrets/hearth-fleet-token";
        description = "File holding the token `hearth fleet add NAME` printed on the hub; passed as the credential `fleet-token` (LoadCredential=), never in the Nix store.";
      };
      brokerUrl = mkOption {
        type = brokerUrlType;
        default = null;
        example = "redis://10.0.0.1:6379/0";
        description = "The hub's broker as this box reaches it, without a password (HEARTH_FLEET_BROKER); a password in it fails the build.";
      };
      brokerPasswordFile = mkOption {
        type = types.nullOr types.path;
        default = null;
        example = "/run/secrets/hearth-broker";
        description = "File holding the broker's password, passed as the credential `broker-password`; null for a broker without one.";
      };
      concurrency = mkOption {
        type = types.ints.between 1 64;
        default = 2;
        example = 4;
        description = "Runs at once on this worker (HEARTH_FLEET_CONCURRENCY); they share hearth-worker.service, whose memory and task limits are this many times `limits.memoryMax` and `limits.tasksMax`.";
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

  config = mkMerge [ fleetWithoutHearth (mkIf cfg.enable (mkMerge [
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
      }) cfg.schedules ++ lib.mapAttrsToList (name: a: {
        assertion = a.heartbeat == null || a.home;
        message = "services.hearth.agents.${name}.heartbeat needs home = true (a role wakes in its home)";
      }) cfg.agents ++ lib.mapAttrsToList (name: a: {
        assertion = a.heartbeat == null || !(cfg.schedules ? "heartbeat-${name}");
        message = "services.hearth.schedules.heartbeat-${name} has the name of agent ${name}'s heartbeat; rename the schedule";
      }) cfg.agents ++ lib.mapAttrsToList (name: _: {
        assertion = builtins.match "[A-Za-z0-9_.-]+" name != null;
        message = "services.hearth.credentials.${name}: a credential name is letters, digits, '.', '_' and '-'";
      }) cfg.credentials ++ lib.mapAttrsToList (name: _: {
        assertion = safeName name && builtins.stringLength name <= 64;
        message = "services.hearth.agents.${name}: an agent name is letters, digits, '.', '_' and '-', at most 64, not starting with '.'";
      }) cfg.agents ++ lib.mapAttrsToList (name: a: {
        # hearth refuses such a profile at every run (hearth/run/profiles.py); say so at build time
        assertion = a.maxMode == null || a.mode == null || modeRank a.mode <= modeRank a.maxMode;
        message = "services.hearth.agents.${name}.mode is ${toString a.mode}, above its maxMode ${toString a.maxMode}";
      }) cfg.agents ++ lib.mapAttrsToList (name: a: {
        assertion = a.maxTools == null || a.allowedTools == null || builtins.all (t: builtins.elem t a.maxTools) a.allowedTools;
        message = "services.hearth.agents.${name}.allowedTools names a tool its maxTools does not allow";
      }) cfg.agents ++ lib.mapAttrsToList (name: _: {
        assertion = safeName name;
        message = "services.hearth.prompts.${name}: a prompt name is letters, digits, '.', '_' and '-', not starting with '.'";
      }) cfg.prompts ++ map (m: {
        assertion = !checkModels || pulled m;
        message = "services.hearth: the fallback model ${m} is not in services.hearth.ollama.models";
      }) allFallbacks ++ builtins.concatLists (lib.mapAttrsToList (name: d: map (c: {
        assertion = cfg.credentials ? ${c};
        message = "services.hearth.alerts.destinations.${name}.url names credential ${c}, which is not in services.hearth.credentials";
      }) (urlCredentials d.url)) cfg.alerts.destinations) ++ builtins.concatLists (lib.mapAttrsToList (name: s: map (c: {
        assertion = cfg.credentials ? ${c};
        message = "services.hearth.schedules.${name}.credentials names ${c}, which is not in services.hearth.credentials";
      }) s.credentials) cfg.schedules) ++ lib.mapAttrsToList (name: _: {
        assertion = name == "default" || cfg.agents ? ${name};
        message = "services.hearth.budget.perAgent.${name}: ${name} is not in services.hearth.agents";
      }) cfg.budget.perAgent ++ map (h: {
        assertion = h.apiKey == null || cfg.credentials ? ${h.apiKey};
        message = "services.hearth.ollama.hosts: the host ${h.url} names apiKey ${toString h.apiKey}, which is not in services.hearth.credentials";
      }) cfg.ollama.hosts ++ lib.mapAttrsToList (name: _: {
        assertion = safeName name && builtins.stringLength name <= 40;
        message = "services.hearth.schedules.${name}: a schedule (mission) name is letters, digits, '.', '_' and '-', at most 40";
      }) cfg.schedules;

      users.users.hearth = {
        isSystemUser = true;
        group = "hearth";
        extraGroups = [ "hearth-submit" ];
        home = cfg.stateDir;
        description = "hearth agent appliance";
      };
      users.groups.hearth = { };
      users.groups.hearth-submit.members = cfg.submitters;

      # the state directory and its modes, from units.toml (hearth install --systemd writes the same)
      systemd.tmpfiles.rules = units.tmpfiles;

      environment.etc = agentFiles // promptFiles // missionFiles // leashFiles // mcpFiles // {
        # host bindings only; the secrets themselves never leave their files
        "hearth/credentials.json".text = builtins.toJSON (lib.mapAttrs (_: c: { inherit (c) hosts; }) cfg.credentials);
      };
      # the package's bin, its completions (bash, zsh, fish) and man pages
      environment.systemPackages = [ cfg.package ];
      environment.variables.HEARTH_STATE_DIR = cfg.stateDir; # so `hearth runs` reads this host's audit

      systemd.services = lib.mapAttrs service (fleetServices units.services);
      systemd.paths = units.paths;
      systemd.timers = units.timers;

      # hearth-spawn runs as hearth and may start (only) the per-run units; with the command center
      # on, hearth may also stop them (its Stop buttons, as `systemctl stop`)
      security.polkit.enable = true;
      security.polkit.extraConfig = units.polkit;
    }
    (mkIf cfg.web.enable {
      assertions = [
        { assertion = builtins.elem cfg.web.listenAddress [ "127.0.0.1" "::1" "localhost" ]
            || cfg.web.operatorTokenFile != null || cfg.web.viewerTokenFile != null;
          message = "services.hearth.web.listenAddress is ${cfg.web.listenAddress}: beyond loopback the command center needs operatorTokenFile or viewerTokenFile"; }
      ];
      networking.firewall.allowedTCPPorts = lib.optional cfg.web.openFirewall cfg.web.port;
    })
    (mkIf channelsEnabled {
      assertions = lib.mapAttrsToList (name: c: {
        assertion = !c.enable || (if name == "telegram" then c.tokenFile else c.passwordFile) != null;
        message = "services.hearth.channels.${name} needs ${if name == "telegram" then "tokenFile" else "passwordFile"}: the secret is passed as a credential, never in channels.toml or the store";
      }) cfg.channels;
      environment.etc."hearth/channels.toml".text = channelsToml;
    })
    (mkIf cfg.ollama.enable {
      services.ollama.enable = true;
      services.ollama.loadModels = cfg.ollama.models ++ lib.optional (embedModel != "off") embedModel;
    })
    (mkIf hub.enable {
      assertions = [
        { assertion = hub.brokerUrl != null;
          message = "services.hearth.fleet.hub.brokerUrl is not set: the broker's URL without a password (redis://10.0.0.1:6379/0), or keep fleet.hub.redis.enable for one on this box"; }
        { assertion = !(carriesPassword hub.brokerUrl);
          message = "services.hearth.fleet.hub.brokerUrl carries a password: put it in a file named by fleet.hub.brokerPasswordFile instead (the URL is in the units' text)"; }
        { assertion = cfg.web.enable;
          message = "services.hearth.fleet.hub needs services.hearth.web.enable: the workers report to the command center (`hearth serve`) at /fleet/"; }
        { assertion = !hub.redis.enable || builtins.all loopback redisAddresses || hub.brokerPasswordFile != null;
          message = "services.hearth.fleet.hub.redis.bind is ${hub.redis.bind}: a broker other boxes reach needs fleet.hub.brokerPasswordFile"; }
      ];
      warnings = lib.optional (cfg.web.enable && loopback cfg.web.listenAddress)
        "services.hearth.fleet.hub: the command center listens on ${cfg.web.listenAddress} only, so workers reach /fleet/ only through a reverse proxy on this box (set web.listenAddress, a token file and web.allowedHosts otherwise)";
      # so `hearth state`, `hearth stop` and `hearth fleet` in a shell on the hub see the runs on the workers
      environment.variables = hubEnv;
    })
    (mkIf (hub.enable && hub.redis.enable) {
      services.redis.servers.hearth = {
        enable = true;
        inherit (hub.redis) bind port;
        requirePassFile = hub.brokerPasswordFile;
        # every request sent and every one taken is on disk before Redis answers: a broker that
        # restarts (or a hub that loses power) still holds them (docs/fleet.md, "When something fails")
        appendOnly = lib.mkDefault true;
        appendFsync = lib.mkDefault "always";
      };
    })
    (mkIf worker.enable {
      assertions = map (o: {
        assertion = worker.${o} != null;
        message = "services.hearth.worker.${o} is not set: a worker needs hub, name, tokenFile and brokerUrl (docs/fleet.md)";
      }) [ "hub" "name" "tokenFile" "brokerUrl" ] ++ [
        { assertion = !(carriesPassword worker.brokerUrl);
          message = "services.hearth.worker.brokerUrl carries a password: put it in a file named by worker.brokerPasswordFile instead (the URL is in the unit's text)"; }
      ];
      warnings = lib.optional (worker.hub != null && worker.brokerUrl != null && builtins.length fleetAddresses < 2 && cfg.agentAddressAllow == [ ])
        "services.hearth.worker: hub or brokerUrl names a host; put its address in services.hearth.agentAddressAllow, or hearth-worker.service cannot reach it (IPAddressAllow= takes no names)";
    })
  ])) ];

  meta.maintainers = [ ]; # hearth's own team maintains it (see the repository); none in nixpkgs' list yet
}
