from datawell.cli import main

main()
