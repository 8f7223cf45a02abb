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
  };
}
