%% A BEAM the crash tests kill -9 (strata_ra_test_lib:spawn_child/2):
%%   erl -noshell -pa ... -eval 'strata_ra_child:main()' -extra Cmd Args...
%% It prints "PID <os pid>" first, then what it did, one line each:
%%
%%   migrate Dir Name
%%     starts strata_ra_log_meta on Dir (migrating its meta.dets), printing
%%     "PROGRESS <phase> <done> <total>" as the migration goes, "OPENED" once
%%     the store is open, "DONE" once it is stopped cleanly; then halts.
%%
%%   sync_writers Dir Name Workers WalBytes
%%     starts strata_ra_log_meta on Dir and prints "READY"; then each of
%%     Workers processes loops over its server <<"w<I>">> with K = T+1, T+2,
%%     ... (T: the server's stored term, 0 if none):
%%       store_sync current_term K        -> "ACK <I> term <K>"
%%       store_sync voted_for {s<K>, n@h} -> "ACK <I> vote <K>"
%%       store (cast) last_applied 10K-5, then
%%       store_sync last_applied 10K      -> "ACK <I> applied <10K>"
%%     until it is killed. An ACK line is printed only after its
%%     store_sync returned ok; an error is printed as "ERR <I> <reason>".
-module(strata_ra_child).

-export([main/0]).

main() ->
    io:format("PID ~s~n", [os:getpid()]),
    try run(init:get_plain_arguments()) of
        _ -> erlang:halt(0)
    catch
        C:R:St ->
            io:format("FAILED ~p:~p ~p~n", [C, R, St]),
            erlang:halt(2)
    end.

run(["migrate", Dir, Name0]) ->
    Name = list_to_atom(Name0),
    Printer = spawn_link(fun printer/0),
    Cfg = strata_ra_test_lib:sys_cfg(Name, Dir, #{migration_progress => Printer}),
    {ok, _} = strata_ra_log_meta:start_link(Cfg),
    io:format("OPENED~n"),
    ok = strata_ra_log_meta:stop(Name),
    io:format("DONE~n");
run(["sync_writers", Dir, Name0, Workers0, Wal0]) ->
    Name = list_to_atom(Name0),
    Cfg = strata_ra_test_lib:sys_cfg(Name, Dir, #{wal_bytes => list_to_integer(Wal0)}),
    {ok, _} = strata_ra_log_meta:start_link(Cfg),
    io:format("READY~n"),
    Self = self(),
    %% Each writer goes on from its server's stored term (the values only
    %% grow, across kills too).
    _ = [spawn_link(fun() ->
                            UId = <<"w", (integer_to_binary(I))/binary>>,
                            K = strata_ra_log_meta:fetch(Name, UId, current_term, 0) + 1,
                            writer(Name, I, K),
                            Self ! done
                    end)
         || I <- lists:seq(1, list_to_integer(Workers0))],
    receive done -> ok end.

printer() ->
    receive
        {strata_ra_migration_progress, _Dir, Phase, Done, Total} ->
            io:format("PROGRESS ~s ~b ~b~n", [Phase, Done, Total]),
            printer()
    end.

writer(Name, I, K) ->
    UId = <<"w", (integer_to_binary(I))/binary>>,
    Vote = {list_to_atom("s" ++ integer_to_list(K)), 'n@h'},
    ack(I, "term", K, strata_ra_log_meta:store_sync(Name, UId, current_term, K)),
    ack(I, "vote", K, strata_ra_log_meta:store_sync(Name, UId, voted_for, Vote)),
    ok = strata_ra_log_meta:store(Name, UId, last_applied, 10 * K - 5),
    ack(I, "applied", 10 * K, strata_ra_log_meta:store_sync(Name, UId, last_applied, 10 * K)),
    writer(Name, I, K + 1).

ack(I, What, V, ok) ->
    io:format("ACK ~b ~s ~b~n", [I, What, V]);
ack(I, _What, _V, Error) ->
    io:format("ERR ~b ~p~n", [I, Error]),
    exit(Error).
