import Glibc
import LinkcondCLI

exit(LinkcondCLI.run(Array(CommandLine.arguments.dropFirst())))
