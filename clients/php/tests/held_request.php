<?php

declare(strict_types=1);

// A request whose body arrives late, run as its own process by the tests (PHP has no threads):
// `php held_request.php <host> <port> <request-file> <bytes> <seconds> finish|drop` sends the first <bytes> of the raw
// HTTP request in <request-file>, prints "held", waits <seconds>, then either sends the rest and prints the answer
// (its status line, headers and body, as received) or closes the connection as a dead client would ("dropped").

[$_, $host, $port, $requestFile, $bytes, $seconds, $mode] = $argv;
$request = (string) file_get_contents($requestFile);
$socket = stream_socket_client("tcp://$host:$port", $errno, $error, 10);
if ($socket === false) {
    fwrite(STDERR, "cannot connect to $host:$port: $error\n");
    exit(1);
}
fwrite($socket, substr($request, 0, (int) $bytes));
echo "held\n";
usleep((int) ((float) $seconds * 1e6));
if ($mode === 'drop') {
    fclose($socket);
    echo "dropped\n";
    exit(0);
}
fwrite($socket, substr($request, (int) $bytes));
stream_set_timeout($socket, 30);
echo stream_get_contents($socket);
fclose($socket);
