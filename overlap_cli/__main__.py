from overlap_cli.cli.fast import main

main()
