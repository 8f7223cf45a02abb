# The three boxes of docs/fleet.md, evaluated by `nix flake check` (checks.<system>.fleet-hub and
# fleet-worker) and exposed as nixosConfigurations.fleet-hub and fleet-worker: the options a person
# sets there must evaluate, with their assertions. Containers, so they need no disks or boot loader.
{ role }:
{ ... }:
{
  boot.isContainer = true;
  system.stateVersion = "24.11";
  networking.hostName = if role == "hub" then "hub" else "gpu1";

  services.hearth = {
    enable = true;
  } // (if role == "hub" then {
    web = {
      enable = true;
      listenAddress = "10.0.0.1";
      allowedHosts = [ "hub.lan" ];
      operatorTokenFile = "/var/lib/secrets/hearth-operator";
    };
    fleet.hub = {
      enable = true;
      brokerPasswordFile = "/var/lib/secrets/hearth-broker";
      redis.bind = "127.0.0.1 10.0.0.1";
    };
    budget.daily = 2000000; # counted at the hub across every worker's runs
  } else {
    ollama.enable = true;
    ollama.models = [ "qwen2.5-coder:7b" ];
    worker = {
      enable = true;
      hub = "http://10.0.0.1:8770";
      name = "gpu1"; # its labels are the hub's: `hearth fleet add gpu1 --label gpu`
      tokenFile = "/var/lib/secrets/hearth-fleet-token";
      brokerUrl = "redis://10.0.0.1:6379/0";
      brokerPasswordFile = "/var/lib/secrets/hearth-broker";
      concurrency = 2;
    };
  });

  networking.firewall.extraCommands = if role == "hub" then ''
    iptables -A nixos-fw -p tcp --dport 6379 -s 10.0.0.2 -j nixos-fw-accept
    iptables -A nixos-fw -p tcp --dport 6379 -s 10.0.0.3 -j nixos-fw-accept
  '' else "";
  networking.firewall.allowedTCPPorts = if role == "hub" then [ 8770 ] else [ ];
}
