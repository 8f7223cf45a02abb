# A small system that enables hearth, evaluated by `nix flake check` (checks.<system>.system) and
# exposed as nixosConfigurations.example. A container, so it needs no disks or boot loader.
{ ... }:
{
  boot.isContainer = true;
  system.stateVersion = "24.11";
  networking.hostName = "hearth-example";

  users.users.alice.isNormalUser = true;

  services.hearth = {
    enable = true;
    ollama.enable = true;
    ollama.models = [ "qwen2.5-coder:7b" ];
    submitters = [ "alice" ];
    configRepo = "/etc/nixos";
    agents.notes = {
      mode = "auto";
      allowedTools = [ "read_file" "list_files" "write_file" ];
      prompt = "You keep the notes in this workspace short and tidy.";
    };
    schedules.daily-notes = {
      goal = "Summarise what changed in the notes today";
      agent = "notes";
      onCalendar = "*-*-* 18:00:00";
    };
    credentials.github = {
      file = "/run/secrets/github-token";
      hosts = [ "api.github.com" ];
    };

    # Several boxes (docs/fleet.md). The hub, at 10.0.0.1: the queue, the command center the
    # workers report to, the one audit, and Redis as the broker.
    # web = {
    #   enable = true;
    #   listenAddress = "10.0.0.1";
    #   operatorTokenFile = "/run/secrets/hearth-operator";
    # };
    # fleet.hub = {
    #   enable = true;
    #   brokerPasswordFile = "/run/secrets/hearth-broker";
    #   redis.bind = "127.0.0.1 10.0.0.1";
    # };
    #
    # A worker (each GPU box), with `hearth fleet add gpu1 --label gpu` run on the hub first:
    # ollama.enable = true;
    # ollama.models = [ "qwen2.5-coder:7b" ];
    # worker = {
    #   enable = true;
    #   hub = "http://10.0.0.1:8770";
    #   name = "gpu1";                   # its labels are given on the hub (hearth fleet add --label)
    #   tokenFile = "/run/secrets/hearth-fleet-token";
    #   brokerUrl = "redis://10.0.0.1:6379/0";
    #   brokerPasswordFile = "/run/secrets/hearth-broker";
    # };
  };
}
