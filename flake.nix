{
  description = "hearth: a local, sandboxed agent appliance (Ollama models, contained tools, a full audit)";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-24.11";

  outputs = { self, nixpkgs }:
    let
      inherit (nixpkgs) lib;
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAll = f: lib.genAttrs systems (system: f system nixpkgs.legacyPackages.${system});
      exampleSystem = system: lib.nixosSystem {
        inherit system;
        modules = [ self.nixosModules.default ./nix/example.nix ];
      };
      # a hub and a worker as docs/fleet.md sets them up
      fleetSystem = role: system: lib.nixosSystem {
        inherit system;
        modules = [ self.nixosModules.default (import ./nix/fleet-example.nix { inherit role; }) ];
      };
    in
    {
      packages = forAll (system: pkgs: {
        default = pkgs.callPackage ./nix/package.nix { commit = self.shortRev or self.dirtyShortRev or null; };
        hearth = self.packages.${system}.default;
      });

      apps = forAll (system: pkgs: let hearth = self.packages.${system}.default; in {
        default = self.apps.${system}.hearth;
        hearth = { type = "app"; program = "${hearth}/bin/hearth"; };
        hearth-loop = { type = "app"; program = "${hearth}/bin/hearth-loop"; };
      });

      # The module, with this flake's package as its default.
      nixosModules.default = { pkgs, lib, ... }: {
        imports = [ ./nix/module.nix ];
        services.hearth.package = lib.mkDefault self.packages.${pkgs.stdenv.hostPlatform.system}.default;
      };

      nixosConfigurations.example = exampleSystem "x86_64-linux";
      nixosConfigurations.fleet-hub = fleetSystem "hub" "x86_64-linux";
      nixosConfigurations.fleet-worker = fleetSystem "worker" "x86_64-linux";

      checks = forAll (system: pkgs: {
        package = self.packages.${system}.default;
        # a whole system that enables the module: options, assertions and units must evaluate
        system = (exampleSystem system).config.system.build.toplevel;
        fleet-hub = (fleetSystem "hub" system).config.system.build.toplevel;
        fleet-worker = (fleetSystem "worker" system).config.system.build.toplevel;
        vm = pkgs.testers.runNixOSTest (import ./nix/vm-test.nix { inherit self; });
      });

      devShells = forAll (system: pkgs: {
        default = pkgs.mkShell {
          inputsFrom = [ self.packages.${system}.default ];
          packages = [ pkgs.bubblewrap pkgs.git pkgs.nix pkgs.systemd pkgs.gnumake ];
        };
      });

      formatter = forAll (system: pkgs: pkgs.nixfmt-rfc-style);
    };
}
