from scalearena.cli import main

main()
