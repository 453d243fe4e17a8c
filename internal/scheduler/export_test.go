package scheduler

// SmallestRequestSQL is the statement of a queue's smallest waiting request.
var SmallestRequestSQL = smallestRequestSQL
