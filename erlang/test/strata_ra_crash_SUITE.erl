%% kill -9 of a whole BEAM using the binding: every store_sync that returned
%% ok before the kill survives it.
-module(strata_ra_crash_SUITE).

-compile([export_all, nowarn_export_all]).

-include_lib("common_test/include/ct.hrl").

-import(strata_ra_test_lib, [sys_cfg/3, start/1, stop/1]).

suite() ->
    [{timetrap, {minutes, 10}}].

all() ->
    [kill9_between_store_syncs_loses_nothing_acknowledged,
     kill9_with_a_small_wal_loses_nothing_acknowledged].

init_per_suite(Config) ->
    Config.

end_per_suite(_Config) ->
    strata_ra_test_lib:end_suite().

init_per_testcase(Case, Config) ->
    strata_ra_test_lib:init_case(Case, [{name, Case} | Config]).

end_per_testcase(_Case, Config) ->
    strata_ra_test_lib:end_case(Config).

kill9_between_store_syncs_loses_nothing_acknowledged(Config) ->
    kill_rounds(Config, 16 * 1024 * 1024, [300, 900, 1700]).

%% The same with a 32 KiB WAL: the kills land during compactions too.
kill9_with_a_small_wal_loses_nothing_acknowledged(Config) ->
    kill_rounds(Config, 32 * 1024, [400, 1200, 2000]).

%% Each round: a child BEAM (strata_ra_child sync_writers) runs 16 writer
%% processes doing store_sync of term, vote and last_applied in turn and
%% printing each acknowledged value; after the given time it is killed -9.
%% The store is reopened here and checked against what was acknowledged;
%% the next round goes on with the same directory.
kill_rounds(Config, WalBytes, Delays) ->
    Dir = filename:join(?config(case_dir, Config), "ra"),
    Workers = 16,
    Acked = lists:foldl(
              fun(Delay, Acked0) ->
                      Acked1 = run_and_kill(Config, Dir, Workers, WalBytes, Delay, Acked0),
                      check_acknowledged(Dir, Workers, WalBytes, Acked1),
                      Acked1
              end, #{}, Delays),
    Total = lists:sum([maps:get(term, V, 0) || V <- maps:values(Acked)]),
    ct:pal("terms acknowledged over all rounds: ~b", [Total]),
    true = Total > 0,
    ok.

%% Acked: #{Worker => #{term => K, vote => K, applied => V}}, the latest
%% acknowledged of each (the values only grow, also across rounds: the
%% writers restart from 1, so a round's values are taken only once they
%% pass the previous round's).
run_and_kill(Config, Dir, Workers, WalBytes, Delay, Acked0) ->
    {Port, OsPid} = strata_ra_test_lib:spawn_child(
                      ["sync_writers", Dir, "crash_meta", integer_to_list(Workers),
                       integer_to_list(WalBytes)], Config),
    {ok, []} = strata_ra_test_lib:child_line(Port, 30000, "READY"),
    Until = erlang:monotonic_time(millisecond) + Delay,
    Acked = collect_acks(Port, Until, Acked0),
    strata_ra_test_lib:kill9(OsPid),
    Status = strata_ra_test_lib:await_exit(Port, 30000),
    ct:log("killed after ~b ms (exit status ~p): ~p", [Delay, Status, Acked]),
    Acked.

collect_acks(Port, Until, Acked) ->
    Left = Until - erlang:monotonic_time(millisecond),
    case Left > 0 of
        false ->
            Acked;
        true ->
            receive
                {Port, {data, {eol, Line}}} ->
                    collect_acks(Port, Until, ack(string:lexemes(binary_to_list(Line), " "),
                                                  Acked));
                {Port, {data, {noeol, _}}} ->
                    collect_acks(Port, Until, Acked);
                {Port, {exit_status, S}} ->
                    ct:fail({child_exited, S})
            after Left ->
                Acked
            end
    end.

ack(["ACK", W, What, V], Acked) ->
    Worker = list_to_integer(W),
    Key = list_to_atom(What),
    Value = list_to_integer(V),
    Mine = maps:get(Worker, Acked, #{}),
    case Value > maps:get(Key, Mine, 0) of
        true -> Acked#{Worker => Mine#{Key => Value}};
        false -> Acked
    end;
ack(["ERR" | _] = Words, _Acked) ->
    ct:fail({child_error, Words});
ack(["FAILED" | _] = Words, _Acked) ->
    ct:fail({child_failed, Words});
ack(_Other, Acked) ->
    Acked.

%% Every acknowledged value is there (or a later one), and no vote is
%% paired with another term than its own (#111): a writer votes s<K> only
%% in term K, so the vote found is undefined or s<Term>.
check_acknowledged(Dir, Workers, WalBytes, Acked) ->
    Name = crash_check,
    start(sys_cfg(Name, Dir, #{wal_bytes => WalBytes})),
    lists:foreach(
      fun(W) ->
              UId = <<"w", (integer_to_binary(W))/binary>>,
              Mine = maps:get(W, Acked, #{}),
              Term = strata_ra_log_meta:fetch(Name, UId, current_term, 0),
              Vote = strata_ra_log_meta:fetch(Name, UId, voted_for),
              Applied = strata_ra_log_meta:fetch(Name, UId, last_applied, 0),
              Fail = fun(What) ->
                             ct:fail({What, UId, #{term => Term, vote => Vote,
                                                   applied => Applied, acked => Mine}})
                     end,
              Term >= maps:get(term, Mine, 0) orelse Fail(acknowledged_term_lost),
              Applied >= maps:get(applied, Mine, 0) orelse Fail(acknowledged_applied_lost),
              OwnVote = {list_to_atom("s" ++ integer_to_list(Term)), 'n@h'},
              (Vote =:= undefined orelse Vote =:= OwnVote) orelse Fail(vote_of_another_term),
              case maps:get(vote, Mine, 0) of
                  Term -> Vote =:= OwnVote orelse Fail(acknowledged_vote_lost);
                  _ -> ok
              end
      end, lists:seq(1, Workers)),
    ct:log("reopened: ~p", [strata_ra_log_meta:stats(Name)]),
    stop(Name).
